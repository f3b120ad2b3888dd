"""`POST /v1/admin/keys` with `isolation`: the first agent key fixes the agent's mode, and a
later key never disagrees (409 `isolation_conflict`, nothing stored). Both backends."""

from __future__ import annotations

import pytest

from memvault.store import agent_isolation
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.test_dedicated.conftest import TENANT, USER, issue


@pytest.fixture
def plain(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend))


def _keys(api: Api) -> int:
    from sqlalchemy import text

    with api.services.db.session(TENANT) as sess:
        return int(sess.execute(text("SELECT count(*) FROM api_keys")).scalar_one())


def test_default_is_shared_and_named(plain: Api) -> None:
    r = issue(plain, "main")
    assert r.status_code == 201 and r.json()["isolation"] == "shared", r.text
    assert agent_isolation.current(plain.services.db, TENANT, USER, "main") == "shared"


def test_a_later_key_keeps_the_mode_or_is_refused(plain: Api) -> None:
    first = issue(plain, "sandbox", isolation="dedicated")
    assert first.status_code == 201 and first.json()["isolation"] == "dedicated", first.text
    again = issue(plain, "sandbox")  # omitted: the agent's mode
    assert again.status_code == 201 and again.json()["isolation"] == "dedicated", again.text
    same = issue(plain, "sandbox", isolation="dedicated")
    assert same.status_code == 201, same.text
    before = _keys(plain)
    other = issue(plain, "sandbox", isolation="shared")
    assert other.status_code == 409, other.text
    error = other.json()["error"]
    assert error["code"] == "isolation_conflict" and error["message"].startswith("isolation")
    assert _keys(plain) == before  # nothing stored
    # and the keys it did issue are dedicated (the request path reads it with the key)
    principal = plain.services.keys.authenticate(again.json()["api_key"])
    assert principal.dedicated


def test_a_mode_a_agent_cannot_become_dedicated(plain: Api) -> None:
    assert issue(plain, "main").status_code == 201
    r = issue(plain, "main", isolation="dedicated")
    assert r.status_code == 409 and r.json()["error"]["code"] == "isolation_conflict", r.text
    principal = plain.services.keys.authenticate(issue(plain, "main").json()["api_key"])
    assert not principal.dedicated


def test_an_agent_from_before_the_record_is_mode_a(plain: Api) -> None:
    """Keys issued before migration 0017 left no record: the agent is Mode A."""
    assert issue(plain, "old").status_code == 201
    with plain.services.db.session(TENANT) as sess:
        agent_isolation.delete_records(sess, TENANT, USER, "old")
    assert agent_isolation.current(plain.services.db, TENANT, USER, "old") == "shared"
    r = issue(plain, "old", isolation="dedicated")
    assert r.status_code == 409, r.text


def test_isolation_needs_an_agent_key_and_a_known_mode(plain: Api) -> None:
    r = issue(plain, "boss", role="tenant_admin", isolation="dedicated")
    assert r.status_code == 422 and "isolation" in r.json()["error"]["message"], r.text
    r = issue(plain, "x", isolation="private")
    assert r.status_code == 422, r.text
    assert issue(plain, "boss", role="auditor").json()["isolation"] == "shared"
