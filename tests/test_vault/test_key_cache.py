"""The verified-key cache: a cached key answers only its own secret, expires, and every change
to key rows (revoke, revoke a scope, erase a scope, delete a tenant) takes effect at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import update

from memvault.errors import AuthenticationError
from memvault.runtime.factory import Services
from memvault.store.models import ApiKeyRow
from memvault.tenancy.key_cache import VerifiedKeys
from memvault.tenancy.principals import Principal, sha256_hex

ServicesFactory = Callable[..., Services]
ALICE = Principal("acme", "alice", "planner", "agent", "k1")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_cached_key_answers_only_its_own_secret_and_expires() -> None:
    clock = Clock()
    cache = VerifiedKeys(2.0, clock=clock)
    cache.put("acme", "k1", sha256_hex("right"), ALICE, cache.generation)
    assert cache.get("acme", "k1", sha256_hex("right")) == ALICE
    assert cache.get("acme", "k1", sha256_hex("wrong")) is None
    assert cache.get("globex", "k1", sha256_hex("right")) is None
    clock.now += 1.99
    assert cache.get("acme", "k1", sha256_hex("right")) == ALICE
    clock.now += 0.01
    assert cache.get("acme", "k1", sha256_hex("right")) is None
    assert len(cache) == 0


def test_a_lookup_that_raced_an_invalidation_is_not_cached() -> None:
    cache = VerifiedKeys(2.0)
    before = cache.generation
    cache.invalidate()  # a revoke committed while the lookup read the row
    cache.put("acme", "k1", sha256_hex("s"), ALICE, before)
    assert cache.get("acme", "k1", sha256_hex("s")) is None
    cache.put("acme", "k1", sha256_hex("s"), ALICE, cache.generation)
    assert cache.get("acme", "k1", sha256_hex("s")) == ALICE


def test_the_cache_is_bounded_and_off_at_zero() -> None:
    cache = VerifiedKeys(2.0, size=3)
    for i in range(5):
        cache.put("acme", f"k{i}", "d", ALICE, cache.generation)
    assert len(cache) == 3
    assert cache.get("acme", "k0", "d") is None and cache.get("acme", "k4", "d") == ALICE
    off = VerifiedKeys(0.0)
    off.put("acme", "k1", "d", ALICE, off.generation)
    assert off.get("acme", "k1", "d") is None


def _services(make_services: ServicesFactory, backend: str) -> Services:
    services = make_services(backend)
    services.keys.verified = VerifiedKeys(60.0)  # long enough that only invalidation can act
    services.tenants.create("acme")
    return services


def _bearer(token: str) -> str:
    return f"Bearer {token}"


@pytest.mark.parametrize(
    "change",
    ["revoke", "revoke_scope", "revoke_agent", "erase_user", "erase_agent", "delete_tenant"],
)
def test_every_change_to_key_rows_takes_effect_at_once(
    make_services: ServicesFactory, backend: str, change: str
) -> None:
    services = _services(make_services, backend)
    keys = services.keys
    issued = keys.issue("acme", "alice", "planner", "agent")
    assert keys.from_authorization(_bearer(issued.api_key), None).key_id == issued.key_id
    assert keys.cached(_bearer(issued.api_key), None) is not None  # now served from the cache
    if change == "revoke":
        keys.revoke("acme", issued.key_id)
    elif change == "revoke_scope":
        keys.revoke_scope("acme", "alice")
    elif change == "revoke_agent":
        keys.revoke_scope("acme", "alice", "planner")
    elif change == "erase_user":
        keys.delete_scope("acme", "alice")
    elif change == "erase_agent":
        keys.delete_scope("acme", "alice", "planner")
    else:
        keys.delete_tenant("acme")
    assert keys.cached(_bearer(issued.api_key), None) is None
    with pytest.raises(AuthenticationError):
        keys.from_authorization(_bearer(issued.api_key), None)


def test_erasing_one_agent_keeps_its_siblings_keys(make_services: ServicesFactory) -> None:
    services = _services(make_services, "sqlite")
    keys = services.keys
    planner = keys.issue("acme", "alice", "planner", "agent")
    coder = keys.issue("acme", "alice", "coder", "agent")
    assert keys.delete_scope("acme", "alice", "planner") == 1
    with pytest.raises(AuthenticationError):
        keys.authenticate(planner.api_key)
    assert keys.authenticate(coder.api_key).agent == "coder"


def test_a_wrong_secret_for_a_cached_key_is_refused(
    make_services: ServicesFactory, backend: str
) -> None:
    services = _services(make_services, backend)
    keys = services.keys
    issued = keys.issue("acme", "alice", "planner", "agent")
    keys.authenticate(issued.api_key)
    forged = issued.api_key[: issued.api_key.rindex(".") + 1] + "x" * 43
    assert keys.cached(_bearer(forged), None) is None
    with pytest.raises(AuthenticationError):
        keys.authenticate(forged)


def test_a_change_made_elsewhere_is_seen_once_the_entry_expires(
    make_services: ServicesFactory, backend: str
) -> None:
    """Another process sharing the database revokes a key: this process keeps accepting it
    for at most the cache's lifetime, then refuses it."""
    services = make_services(backend)
    services.tenants.create("acme")
    clock = Clock()
    services.keys.verified = VerifiedKeys(2.0, clock=clock)
    keys = services.keys
    issued = keys.issue("acme", "alice", "planner", "agent")
    keys.authenticate(issued.api_key)
    with services.db.session("acme") as sess:  # not through ApiKeys: no invalidation
        sess.execute(
            update(ApiKeyRow)
            .where(ApiKeyRow.tenant_id == "acme", ApiKeyRow.key_id == issued.key_id)
            .values(revoked_at=1.0)
        )
    assert keys.authenticate(issued.api_key).key_id == issued.key_id
    clock.now += 2.0
    with pytest.raises(AuthenticationError):
        keys.authenticate(issued.api_key)


def test_the_default_lifetime_depends_on_the_store(make_services: ServicesFactory) -> None:
    assert make_services("sqlite").keys.verified.ttl == 2.0
    from memvault.config import Settings

    pg = Settings(database_url="postgresql+psycopg://app@127.0.0.1/db")
    assert pg.resolved_key_cache_seconds() == 0.0
    tuned = Settings(database_url=pg.database_url, key_cache_seconds=5)
    assert tuned.resolved_key_cache_seconds() == 5


def test_a_request_hashes_the_secret_once_on_a_miss_and_on_a_hit(
    make_services: ServicesFactory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`present` parses and hashes; `verify` reads the row without hashing or asking the cache
    again; the next `present` answers from the cache."""
    import memvault.tenancy.principals as principals

    services = _services(make_services, backend)
    keys = services.keys
    issued = keys.issue("acme", "alice", "planner", "agent")
    hashed: list[str] = []
    real = principals.sha256_hex
    monkeypatch.setattr(principals, "sha256_hex", lambda s: hashed.append(s) or real(s))
    found = keys.present(_bearer(issued.api_key), None)
    assert isinstance(found, principals.PresentedKey) and found.key_id == issued.key_id
    assert keys.verify(found).key_id == issued.key_id
    assert len(hashed) == 1
    assert keys.present(_bearer(issued.api_key), None) == keys.verify(found)
    assert len(hashed) == 2
    forged = principals.PresentedKey("acme", issued.key_id, real("not the secret"))
    with pytest.raises(AuthenticationError):
        keys.verify(forged)
