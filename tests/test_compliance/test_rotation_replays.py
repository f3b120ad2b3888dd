"""A data key rotation keeps idempotency replays working (issue 33, "Key rotation").

A retried `POST /v1/memories` with the same `Idempotency-Key` replays the first answer, also after
an operator rotated the scope's data key in between: the rotation keeps the old version while a
live record is sealed under it, and the maintenance sweeper destroys it once the record expired.
Over HTTP against real services, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import update

from memvault.compliance import rotation
from memvault.compliance.rotation_erasure import count_subject
from memvault.scope import Scope
from memvault.store.idempotency_records import TTL_SECONDS
from memvault.store.models import IdempotencyRow
from tests.apiclient import Api
from tests.conftest import ServicesFactory

REPLAYED = "idempotent-replayed"
BODY = {"text": "the allotment shed key is under the blue pot", "topics": ["garden"]}


def _rotate(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    """Rotate as an operator does (the admin API) and wait for the job to finish."""
    admin = api.tenant("t1")
    r = api.call("POST", "/v1/admin/keys/rotate", admin, json=body)
    assert r.status_code == 202, r.text
    deadline = time.monotonic() + 30
    while True:
        got = api.call("GET", f"/v1/admin/keys/rotations/{r.json()['id']}", admin).json()
        if got["state"] == "done" or time.monotonic() > deadline:
            return dict(got)
        time.sleep(0.05)


def _post(api: Api, key: str, idem_key: str) -> Any:
    return api.call("POST", "/v1/memories", key, json=BODY, headers={"Idempotency-Key": idem_key})


def test_a_retry_after_a_data_key_rotation_replays(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend))
    key = api.agent_key("t1", "u1", "a1")
    first = _post(api, key, "rotate-1")
    assert first.status_code == 201, first.text
    api.add(key, "the compost bin is emptied in March")  # a note the rotation re-encrypts

    done = _rotate(api, {"user_id": "u1", "agent_id": "a1"})
    assert done["state"] == "done" and done["done"] == 2, done

    again = _post(api, key, "rotate-1")
    assert again.status_code == first.status_code, again.text
    assert again.headers.get(REPLAYED) == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.content == first.content
    assert api.call("GET", "/v1/memories", key).json()["total"] == 2  # one note from the key

    # The old version was kept for the record alone; once it expired the sweeper destroys it.
    services = api.services
    scope = Scope("t1", "u1", "a1")
    assert services.keyring.key_versions(scope) == [1, 2]
    assert rotation.retire_held_versions(services) == 0  # the record still lives
    with services.db.session("t1") as sess:
        sess.execute(
            update(IdempotencyRow)
            .where(IdempotencyRow.tenant_id == "t1")
            .values(created_at=time.time() - TTL_SECONDS - 1)
        )
    assert rotation.retire_held_versions(services) == 1
    assert services.keyring.key_versions(scope) == [2]
    assert rotation.retire_held_versions(services) == 0
    for note in api.call("GET", "/v1/memories", key).json()["items"]:
        assert api.call("GET", f"/v1/memories/{note['id']}", key).status_code == 200


def test_an_erase_still_destroys_a_version_held_for_replays(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend))
    admin = api.tenant("t1")
    key = api.agent_key("t1", "u1", "a1")
    assert _post(api, key, "rotate-2").status_code == 201
    assert _rotate(api, {"user_id": "u1"})["state"] == "done"
    scope = Scope("t1", "u1", "a1")
    assert api.services.keyring.key_versions(scope) == [1, 2]
    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": "u1"})
    assert r.status_code == 200 and r.json()["receipt"]["verified"] is True, r.text
    assert api.services.keyring.key_versions(scope) == []
    assert count_subject(api.services, "t1", "u1", None) == 0
    assert rotation.retire_held_versions(api.services) == 0
