"""API keys that SQL cannot forge (issue 36, item 5).

Whoever can write SQL as the app role (an injection, a leaked `MEMVAULT_DATABASE_URL`) sets
`app.tenant_id` to another tenant and inserts an `api_keys` row whose digest they computed. With
plain SHA-256 digests that row authenticated and read the tenant's plaintext. Digests are now
HMACs under a pepper kept in the keystore, wrapped by the master key: the forged key gets 401,
real keys keep working, and keys issued before the change are upgraded once and keep working.
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

import pytest
from sqlalchemy import create_engine, delete, text

from memvault.embed.base import Embedder
from memvault.keyring._keystore import identity
from memvault.runtime.factory import Services, open_services
from memvault.store.database import Database
from tests.apiclient import Api
from tests.conftest import ServicesFactory

API_KEY_DIGESTS = "api_key_digests"  # the keystore's record that the upgrade ran
SECRET_NOTE = "Globex's launch code word is periwinkle"


def _forge_row(services: Services, tenant: str, key_id: str, digest: str, role: str) -> None:
    """Insert a key row as an attacker with the app role's SQL would: through the app's own
    login (on PostgreSQL the app role, bound by RLS), tenant set with `set_config`."""
    db = services.db
    engine = create_engine(db.url, connect_args=_connect_args(db))
    try:
        with engine.begin() as conn:
            if db.is_postgres:
                conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant})
                assert conn.execute(text("SELECT current_user")).scalar_one() == "memvault_app"
            conn.execute(
                text(
                    "INSERT INTO api_keys (tenant_id, key_id, secret_sha256, user_id, agent_id,"
                    " role, created_at) VALUES (:t, :k, :d, 'admin', 'admin', :r, 0)"
                ),
                {"t": tenant, "k": key_id, "d": digest, "r": role},
            )
    finally:
        engine.dispose()


def _connect_args(db: Database) -> dict[str, str]:
    return {"options": f"-csearch_path={db.schema}"} if db.is_postgres and db.schema else {}


def _forged_token(services: Services, tenant: str, role: str = "tenant_admin") -> str:
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    _forge_row(services, tenant, key_id, hashlib.sha256(secret.encode()).hexdigest(), role)
    return f"mvk_{tenant}.{key_id}.{secret}"


def test_a_key_row_written_through_sql_never_authenticates(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    api = Api(services)
    admin = api.tenant("globex")
    agent = api.agent_key("globex", "alice", "planner")
    api.add(agent, SECRET_NOTE)

    forged_admin = _forged_token(services, "globex")
    forged_agent = f"mvk_globex.{secrets.token_hex(8)}.forgedsecretXYZ"
    key_id = forged_agent.split(".")[1]
    _forge_row(services, "globex", key_id, hashlib.sha256(b"forgedsecretXYZ").hexdigest(), "agent")
    export = api.call("GET", "/v1/admin/export", forged_admin, params={"user_id": "alice"})
    assert export.status_code == 401 and "periwinkle" not in export.text
    assert api.call("GET", "/v1/admin/audit", forged_admin).status_code == 401
    refused = api.call("POST", "/v1/memories/search", forged_agent, json={"query": "code word"})
    assert refused.status_code == 401
    assert "periwinkle" not in refused.text

    # Real keys work, through the database and through the cache.
    assert api.call("GET", "/v1/admin/audit", admin).status_code == 200
    real_export = api.call("GET", "/v1/admin/export", admin, params={"user_id": "alice"})
    assert real_export.status_code == 200 and "periwinkle" in real_export.text
    found = api.search(agent, "launch code word")
    assert [r["text"] for r in found] == [SECRET_NOTE]
    # The stored digest is no function of the secret alone.
    with services.db.session("globex") as sess:
        digests = sess.execute(text("SELECT secret_sha256 FROM api_keys")).scalars().all()
    plain = {hashlib.sha256(t.rsplit(".", 1)[1].encode()).hexdigest() for t in (admin, agent)}
    assert not plain & set(digests)


def test_keys_of_the_old_scheme_are_upgraded_once_and_forgeries_stay_refused(
    make_services: ServicesFactory, backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    """An upgrade from a release that stored plain SHA-256 digests: existing keys keep working
    (upgraded in place at the first start), and a plain digest written after that upgrade is
    refused, also after later restarts (the upgrade never runs again)."""
    services = make_services(backend, data_dir=tmp_path / "data")
    api = Api(services)
    api.tenant("globex")
    # The old release: keys stored as plain SHA-256, a keystore that never upgraded them.
    legacy_admin = _forged_token(services, "globex")
    legacy_agent = _forged_token(services, "globex", role="agent")
    legacy_agent_row = legacy_agent.split(".")[1]
    with services.db.session("globex") as sess:
        sess.execute(
            text("UPDATE api_keys SET user_id = 'alice', agent_id = 'planner' WHERE key_id = :k"),
            {"k": legacy_agent_row},
        )
    with services.keyring._store.engine.begin() as conn:  # the old release had no such record
        conn.execute(delete(identity).where(identity.c.name == API_KEY_DIGESTS))
    settings = services.settings
    services.close()

    upgraded = open_services(settings, embedder=embedder)
    try:
        api = Api(upgraded)
        assert api.call("GET", "/v1/admin/audit", legacy_admin).status_code == 200
        api.add(legacy_agent, SECRET_NOTE)
        assert [r["text"] for r in api.search(legacy_agent, "launch code")] == [SECRET_NOTE]
        with upgraded.db.session("globex") as sess:
            digests = sess.execute(text("SELECT secret_sha256 FROM api_keys")).scalars().all()
        assert digests and all(d.startswith("h1") for d in digests)
        forged = _forged_token(upgraded, "globex")
        assert api.call("GET", "/v1/admin/audit", forged).status_code == 401
    finally:
        upgraded.close()

    restarted = open_services(settings, embedder=embedder)
    try:
        api = Api(restarted)
        assert api.call("GET", "/v1/admin/audit", forged).status_code == 401
        assert api.call("GET", "/v1/admin/audit", legacy_admin).status_code == 200
    finally:
        restarted.close()


@pytest.mark.parametrize("where", ["another key row", "another tenant"])
def test_a_real_digest_copied_to_another_row_does_not_authenticate(
    make_services: ServicesFactory, backend: str, where: str
) -> None:
    services = make_services(backend)
    api = Api(services)
    api.tenant("acme")
    api.tenant("globex")
    admin = api.admin_keys["acme"]
    tenant, key_id, secret = admin[len("mvk_") :].rsplit(".", 2)
    with services.db.session(tenant) as sess:
        digest = sess.execute(
            text("SELECT secret_sha256 FROM api_keys WHERE key_id = :k"), {"k": key_id}
        ).scalar_one()
    target = "acme" if where == "another key row" else "globex"
    copied_id = secrets.token_hex(8)
    _forge_row(services, target, copied_id, digest, "tenant_admin")
    token = f"mvk_{target}.{copied_id}.{secret}"
    assert api.call("GET", "/v1/admin/audit", token).status_code == 401
    assert api.call("GET", "/v1/admin/audit", admin).status_code == 200
