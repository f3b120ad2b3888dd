"""Sessions, event time and fusion over REST, and the operator's index status."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from memvault.store.models import NoteRow
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory


@pytest.fixture
def api(make_services: ServicesFactory) -> Api:
    return Api(make_services("sqlite"))


def test_session_fields_round_trip(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    note = api.add(
        key,
        "Caroline adopted a greyhound from the Willowbrook shelter",
        session_id="chat-2023-05-08",
        occurred_at="2023-05-08T13:56:00+02:00",
    )
    assert note["session_id"] == "chat-2023-05-08"
    assert note["occurred_at"] == "2023-05-08T11:56:00Z"
    got = api.call("GET", f"/v1/memories/{note['id']}", key).json()
    assert got["session_id"] == note["session_id"] and got["occurred_at"] == note["occurred_at"]
    plain = api.add(key, "A note written with neither field at all")
    assert plain["session_id"] is None and plain["occurred_at"] == plain["created_at"]
    hits = api.search(key, "greyhound Willowbrook", mode="hybrid")
    assert hits[0]["id"] == note["id"] and hits[0]["session_id"] == "chat-2023-05-08"


@pytest.mark.parametrize(
    "body",
    [
        {"session_id": "has spaces"},
        {"session_id": 7},
        {"occurred_at": "2023-05-08"},
        {"occurred_at": "2023-05-08T13:56:00"},  # no offset
        {"occurred_at": 1683546960},
        {"occurred_at": "0999-01-01T00:00:00Z"},
    ],
)
def test_bad_session_fields_are_422_and_store_nothing(api: Api, body: dict[str, object]) -> None:
    key = api.agent_key("t1", "u1", "a1")
    r = api.call("POST", "/v1/memories", key, json={"text": "A fine note text", **body})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert api.call("GET", "/v1/memories", key).json()["total"] == 0


def test_fusion_is_selectable_and_validated(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    target = api.add(key, "Ticket QX-7731 is blocked on the vendor")
    for fusion in ("score", "rrf"):
        assert (
            api.search(key, "QX-7731 vendor", mode="hybrid", fusion=fusion)[0]["id"]
            == (target["id"])
        )
    r = api.call("POST", "/v1/memories/search", key, json={"query": "QX", "fusion": "borda"})
    assert r.status_code == 422


def test_operator_sees_stale_notes(api: Api) -> None:
    key = api.agent_key("t1", "u1", "a1")
    api.add(key, "The heron nests near the old mill")
    status = api.call("GET", "/v1/operator/index", OPERATOR_KEY).json()
    assert status["stale_notes"] == 0 and status["index_version"] >= 2
    with api.services.db.session("t1") as sess:
        sess.execute(update(NoteRow).values(index_version=1))
    status = api.call("GET", "/v1/operator/index", OPERATOR_KEY).json()
    assert status["stale_notes"] == 1 and status["stale_by_tenant"] == {"t1": 1}
    assert api.call("GET", "/v1/operator/index", key).status_code in (401, 403)
