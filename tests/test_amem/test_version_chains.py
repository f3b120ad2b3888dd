"""A fact that changes twice, beside other people's look-alike facts: A-MEM relates each version
to the current one of the same subject, never to a superseded version or to another person's.

Over HTTP, on both backends, with the offline judge (the default)."""

from __future__ import annotations

import pytest

from tests.apiclient import Api
from tests.conftest import ServicesFactory


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend, amem=True))


def _add(api: Api, key: str, text: str, month: int) -> dict:
    return api.add(key, text, session_id=f"s{month}", occurred_at=f"2026-{month:02d}-10T18:00:00Z")


def test_a_third_version_supersedes_the_second_and_as_of_walks_the_chain(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    green = _add(api, key, "Bob's favourite colour is green", 1)
    blue = _add(api, key, "Bob's favourite colour is blue", 3)
    red = _add(api, key, "Bob's favourite colour is red", 5)
    assert red["evolution"]["target_id"] == blue["id"]  # the current version, not the first
    top = api.search(key, "What is Bob's favourite colour?", limit=5)
    assert [r["id"] for r in top][:1] == [red["id"]]
    assert {green["id"], blue["id"]}.isdisjoint(r["id"] for r in top)
    for as_of, want in (("2026-02-01", green), ("2026-04-01", blue), ("2026-06-01", red)):
        then = api.search(key, "What is Bob's favourite colour?", as_of=f"{as_of}T00:00:00Z")
        assert then[0]["id"] == want["id"], as_of


def test_another_persons_look_alike_fact_is_never_superseded(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    carol = _add(api, key, "Carol's favourite food is curry", 1)
    bob = _add(api, key, "Bob's favourite food is tacos", 2)
    assert bob["evolution"]["action"] == "NEW"  # a link at most, no relation by kind
    carol_now = api.call("GET", f"/v1/memories/{carol['id']}", key).json()
    assert carol_now["valid_to"] is None and "superseded_by" not in carol_now["relations"]
    bob_later = _add(api, key, "Bob's favourite food is sushi", 3)
    assert bob_later["evolution"]["action"] == "EVOLVE"
    assert bob_later["evolution"]["target_id"] == bob["id"]
    shown = {r["id"] for r in api.search(key, "favourite food", limit=10)}
    assert carol["id"] in shown and bob_later["id"] in shown and bob["id"] not in shown
