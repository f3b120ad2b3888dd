"""An untrusted mark made on one worker refuses reads on every worker of the database."""

from __future__ import annotations

from memvault.runtime.factory import Services
from tests.apiclient import Api


def test_a_mark_on_one_worker_refuses_reads_on_another_and_the_unmark_reaches_it(
    two_workers: tuple[Services, Services],
) -> None:
    first, second = Api(two_workers[0]), Api(two_workers[1])
    key = first.agent_key("acme", "alice", "browser")
    note = first.add(key, "Alice lives at 12 Rosemary Lane, Springfield")["id"]
    in_session = {"X-Session-Id": "chat-1"}

    def read_on(api: Api) -> int:
        return int(api.call("GET", f"/v1/memories/{note}", key, headers=in_session).status_code)

    assert read_on(first) == 200 and read_on(second) == 200
    r = first.call("POST", "/v1/sessions/chat-1/untrusted", key, json={"reason": "web page"})
    assert r.status_code == 200, r.text
    assert read_on(second) == 423 and read_on(first) == 423
    r = second.call("DELETE", "/v1/sessions/chat-1/untrusted", key)
    assert r.status_code == 204
    assert read_on(first) == 200 and read_on(second) == 200
