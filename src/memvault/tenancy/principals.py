"""API keys and principals. A key is stored as its key id and a digest, never the secret.

Token format: `mvk_<tenant>.<key id>.<secret>`. The tenant travels in the token so the lookup can
run inside that tenant's row-level-security context; key id and secret never contain a dot.

The digest (column `secret_sha256`, a name kept from its first scheme) is an HMAC under the
tenant's API key pepper (`IndexKey.api_key_digest`), which lives in the keystore wrapped under
the master key provider, never in the data store: a row written through SQL, with a digest its
writer computed, never authenticates. Plain SHA-256 digests of older releases are upgraded once,
at start-up (`upgrade_legacy_digests`); after that, one is never accepted or upgraded again.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, cast

from sqlalchemy import and_, bindparam, delete, select, update
from sqlalchemy.orm import Session

from memvault.errors import AuthenticationError, InvalidRequest, KeySuspended, NotFound
from memvault.scope import SHARED_AGENT, Scope, validate_id, validate_new_id
from memvault.store import agent_isolation as isolation_modes
from memvault.store.database import Database
from memvault.store.driver_sql import DriverStatement
from memvault.store.models import AgentIsolationRow, ApiKeyRow
from memvault.tenancy.key_cache import VerifiedKeys

if TYPE_CHECKING:
    from memvault.keyring import IndexKey

Role = Literal["agent", "tenant_admin", "auditor", "operator"]
ROLES: tuple[Role, ...] = ("agent", "tenant_admin", "auditor", "operator")
TENANT_ROLES: tuple[Role, ...] = ("agent", "tenant_admin", "auditor")
TOKEN_PREFIX = "mvk_"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: fixed by the API key, never by the request."""

    tenant: str | None
    user: str | None
    agent: str | None
    role: Role
    key_id: str
    dedicated: bool = False
    """The key's agent is Mode B (`store.agent_isolation`): read with the key, so a request
    needs no other database read to know it."""

    @property
    def scope(self) -> Scope:
        """The memory scope of an agent key."""
        if self.tenant is None or self.user is None or self.agent is None:
            raise InvalidRequest("this key has no memory scope")
        return Scope(self.tenant, self.user, self.agent)


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A freshly issued key. `api_key` is shown once and never stored."""

    key_id: str
    api_key: str
    tenant: str
    user: str
    agent: str
    role: Role
    isolation: str = isolation_modes.SHARED


class Peppers(Protocol):
    """Where API key peppers come from (`Keyring`)."""

    def api_key_pepper(self, tenant: str, *, create: bool = False) -> IndexKey | None: ...


def sha256_hex(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


_NO_MATCH = "h1" + "0" * 62
"""Compared against when there is no row or no pepper, so timing says nothing about key ids."""


def split_token(token: str) -> tuple[str, str, str]:
    """(tenant, key id, secret) of a token, or AuthenticationError for any malformed token."""
    if not token.startswith(TOKEN_PREFIX):
        raise AuthenticationError("malformed api key")
    parts = token[len(TOKEN_PREFIX) :].rsplit(".", 2)
    if len(parts) != 3 or not all(parts):
        raise AuthenticationError("malformed api key")
    return parts[0], parts[1], parts[2]


class ApiKeys:
    """Issues, revokes and authenticates tenant keys stored in the data store.

    `cache_seconds` > 0 keeps keys the database verified for that long (`VerifiedKeys`), so
    most requests authenticate without a database read; every change this class makes to key
    rows clears it at once. Another process sharing the database (PostgreSQL) may see a revoked
    key accepted for up to `cache_seconds`; 0 disables the cache.
    """

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float],
        peppers: Peppers,
        *,
        cache_seconds: float = 0.0,
    ) -> None:
        """`peppers` (the `Keyring`) gives each tenant's API key pepper."""
        self._db = db
        self._clock = clock
        self._peppers = peppers
        self.verified: VerifiedKeys[Principal] = VerifiedKeys(cache_seconds)

    def issue(
        self, tenant: str, user: str, agent: str, role: str, isolation: str | None = None
    ) -> IssuedKey:
        """Create a key for (tenant, user, agent) with `role`.

        `isolation` (agent keys): `shared` (Mode A) or `dedicated` (Mode B); None keeps the
        agent's mode, `shared` for a new agent. The first agent key fixes the agent's mode; a
        key asking for the other one is refused (`IsolationConflict`, 409) and nothing is stored.
        """
        validate_id(tenant, "tenant_id")
        validate_new_id(user, "user_id")  # stored in clear: never a credential
        validate_new_id(agent, "agent_id")
        if role not in TENANT_ROLES:
            raise InvalidRequest(f"role must be one of {', '.join(TENANT_ROLES)}")
        if role == "agent" and agent == SHARED_AGENT:
            raise InvalidRequest("agent_id 'shared' is reserved for the shared scope")
        isolation_modes.check_mode(isolation)
        mode = isolation_modes.SHARED
        if role == "agent":
            mode = isolation_modes.record(self._db, self._clock, tenant, user, agent, isolation)
        elif isolation == isolation_modes.DEDICATED:
            raise InvalidRequest("isolation 'dedicated' applies to agent keys only")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        pepper = self._peppers.api_key_pepper(tenant, create=True)
        assert pepper is not None
        digest = pepper.api_key_digest(key_id, hashlib.sha256(secret.encode()).digest())
        with self._db.session(tenant) as sess:
            sess.add(
                ApiKeyRow(
                    tenant_id=tenant,
                    key_id=key_id,
                    secret_sha256=digest,
                    user_id=user,
                    agent_id=agent,
                    role=role,
                    created_at=self._clock(),
                )
            )
        token = f"{TOKEN_PREFIX}{tenant}.{key_id}.{secret}"
        return IssuedKey(key_id, token, tenant, user, agent, cast(Role, role), mode)

    def revoke(self, tenant: str, key_id: str) -> None:
        """Revoke a key of `tenant`; NotFound for a key id the tenant does not have."""
        self._change_live_key(tenant, key_id, revoked_at=self._clock())

    def suspend(self, tenant: str, key_id: str, *, suspended: bool = True) -> None:
        """Suspend a live key (a read alert), or resume it; NotFound for an unknown key.

        Checked in the same key lookup as revocation, so every worker refuses a suspended key
        once its verified-key cache (`cache_seconds`) lapses; this process's at once."""
        self._change_live_key(tenant, key_id, suspended_at=self._clock() if suspended else None)

    def _change_live_key(self, tenant: str, key_id: str, **values: float | None) -> None:
        """Set `values` on a live (not revoked) key of `tenant`; NotFound when there is none."""
        with self._changing(tenant) as sess:
            result = sess.execute(
                update(ApiKeyRow)
                .where(
                    ApiKeyRow.tenant_id == tenant,
                    ApiKeyRow.key_id == key_id,
                    ApiKeyRow.revoked_at.is_(None),
                )
                .values(**values)
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NotFound("no such key")

    @contextmanager
    def _changing(self, tenant: str) -> Iterator[Session]:
        """A transaction that changes key rows. The verified-key cache is cleared when it
        ends, committed or not: a commit of unknown outcome must not leave a key cached."""
        try:
            with self._db.session(tenant) as sess:
                yield sess
        finally:
            self.verified.invalidate()

    def from_authorization(self, header: str, operator_key: str | None) -> Principal:
        """The caller of an `Authorization: Bearer <key>` header; AuthenticationError otherwise.

        A token without the tenant-key prefix is the operator key or nothing.
        """
        bearer = _bearer(header, operator_key)
        return bearer if isinstance(bearer, Principal) else self.authenticate(bearer)

    def revoke_scope(self, tenant: str, user: str, agent: str | None = None) -> int:
        """Revoke every live key of a user (or of one agent of a user); returns how many."""
        where = [
            ApiKeyRow.tenant_id == tenant,
            ApiKeyRow.user_id == user,
            ApiKeyRow.revoked_at.is_(None),
        ]
        if agent is not None:
            where.append(ApiKeyRow.agent_id == agent)
        with self._changing(tenant) as sess:
            result = sess.execute(update(ApiKeyRow).where(*where).values(revoked_at=self._clock()))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def authenticate(self, token: str) -> Principal:
        """The principal of a valid, unrevoked token; AuthenticationError otherwise."""
        found = self._recall(_present(token))
        return found if isinstance(found, Principal) else self.verify(found)

    def verify(self, presented: PresentedKey) -> Principal:
        """Look a presented key up in the database (no cache): its principal when it is valid
        and unrevoked, AuthenticationError otherwise. The answer is cached for `present`."""
        tenant, key_id, digest = presented.tenant, presented.key_id, presented.digest
        generation = self.verified.generation
        with self._db.driver_transaction(tenant) as conn:
            found = _KEY_BY_ID.rows(conn, {"tenant_id": tenant, "key_id": key_id})
        row = found[0] if found else None
        pepper = self._peppers.api_key_pepper(tenant) if row is not None else None
        # Compare a digest even when the row is missing, so timing says little about key ids.
        expected = str(row[0]) if row is not None and pepper is not None else _NO_MATCH
        computed = (
            pepper.api_key_digest(key_id, bytes.fromhex(digest)) if pepper is not None else ""
        )
        matches = hmac.compare_digest(expected, computed or _NO_MATCH) and bool(computed)
        if row is None or not matches or row[1] is not None:
            raise AuthenticationError("invalid or revoked api key")
        if row[5] is not None:
            raise KeySuspended("this key is suspended by a read alert until an admin resumes it")
        dedicated = row[4] == "agent" and row[6] == isolation_modes.DEDICATED
        principal = Principal(
            tenant, str(row[2]), str(row[3]), cast(Role, row[4]), key_id, dedicated
        )
        self.verified.put(tenant, key_id, digest, principal, generation)
        return principal

    def present(self, header: str, operator_key: str | None) -> Principal | PresentedKey:
        """What an `Authorization` header proves without a database read: the principal (the
        operator key, or a key verified less than `cache_seconds` ago), else the parsed and
        hashed key for `verify`. Raises AuthenticationError for a malformed header. Safe to
        call on an event loop; the secret is hashed once per request either way."""
        bearer = _bearer(header, operator_key)
        if isinstance(bearer, Principal):
            return bearer
        return self._recall(_present(bearer))

    def _recall(self, presented: PresentedKey) -> Principal | PresentedKey:
        """The principal the cache holds for `presented`, else `presented` itself."""
        cached = self.verified.get(presented.tenant, presented.key_id, presented.digest)
        return cached if cached is not None else presented

    def cached(self, header: str, operator_key: str | None) -> Principal | None:
        """`from_authorization` when it needs no database read (`present`); None when it
        does. Raises as `from_authorization` for a malformed header."""
        found = self.present(header, operator_key)
        return found if isinstance(found, Principal) else None

    def delete_tenant(self, tenant: str) -> int:
        """Remove every key of a tenant (tenant deletion)."""
        return self.delete_scope(tenant)

    def delete_scope(self, tenant: str, user: str | None = None, agent: str | None = None) -> int:
        """Remove the key rows of a tenant, of one of its users, or of one agent of a user
        (erasure: the rows hold the ids); returns how many."""
        where = [ApiKeyRow.tenant_id == tenant]
        if user is not None:
            where.append(ApiKeyRow.user_id == user)
            if agent is not None:
                where.append(ApiKeyRow.agent_id == agent)
        with self._changing(tenant) as sess:
            result = sess.execute(delete(ApiKeyRow).where(*where))
            return int(result.rowcount)  # type: ignore[attr-defined]


_KEY_BY_ID = DriverStatement(
    select(
        ApiKeyRow.secret_sha256,
        ApiKeyRow.revoked_at,
        ApiKeyRow.user_id,
        ApiKeyRow.agent_id,
        ApiKeyRow.role,
        ApiKeyRow.suspended_at,
        AgentIsolationRow.isolation,
    )
    .outerjoin(
        AgentIsolationRow,
        and_(
            AgentIsolationRow.tenant_id == ApiKeyRow.tenant_id,
            AgentIsolationRow.user_id == ApiKeyRow.user_id,
            AgentIsolationRow.agent_id == ApiKeyRow.agent_id,
        ),
    )
    .where(ApiKeyRow.tenant_id == bindparam("tenant_id"), ApiKeyRow.key_id == bindparam("key_id")),
    "select",
)
"""Every request's key lookup, on the driver's cursor (`driver_sql`), with its agent's
isolation (a primary-key join: no second round trip)."""


@dataclass(frozen=True, slots=True)
class PresentedKey:
    """A tenant key as presented: its tenant and key id, and the SHA-256 of its secret (hex;
    compared in memory by the cache, and HMACed under the pepper against the stored digest)."""

    tenant: str
    key_id: str
    digest: str


def _present(token: str) -> PresentedKey:
    tenant, key_id, secret = split_token(token)
    try:
        validate_id(tenant, "tenant_id")
    except InvalidRequest as exc:
        raise AuthenticationError("malformed api key") from exc
    return PresentedKey(tenant, key_id, sha256_hex(secret))


def _bearer(header: str, operator_key: str | None) -> Principal | str:
    """What an `Authorization` header presents, without I/O: the operator's principal, or a
    tenant key's token (`mvk_...`) still to authenticate; AuthenticationError otherwise."""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationError("missing bearer api key")
    if token.startswith(TOKEN_PREFIX):
        return token
    if operator_key and operator_matches(operator_key, token):
        return operator_principal()
    raise AuthenticationError("invalid or revoked api key")


def operator_principal() -> Principal:
    return Principal(None, None, None, "operator", "operator")


def operator_matches(configured: str, presented: str) -> bool:
    """Constant-time comparison of the operator key."""
    return hmac.compare_digest(sha256_hex(configured), sha256_hex(presented))
