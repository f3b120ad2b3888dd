"""Tenants: created by the operator, each with a first tenant-admin key."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.exc import IntegrityError

from memvault.errors import Conflict, NotFound
from memvault.scope import validate_new_id
from memvault.store.database import Database
from memvault.store.models import TenantRow
from memvault.tenancy.principals import ApiKeys, IssuedKey

ADMIN_USER = "admin"
ADMIN_AGENT = "admin"


class Tenants:
    """The tenants table (under row-level security; `all` lists ids through `tenant_ids`)."""

    def __init__(self, db: Database, keys: ApiKeys, clock: Callable[[], float]) -> None:
        self._db = db
        self._keys = keys
        self._clock = clock

    def create(self, tenant: str) -> IssuedKey:
        """Create a tenant and return its first tenant-admin key (shown once).

        Tenant ids are unique regardless of case: `GLOBEX` is refused while `globex` exists.
        The unique index on `lower(tenant_id)` decides (an exact repeat hits the primary key),
        so two racing creations cannot both succeed.
        """
        validate_new_id(tenant, "tenant_id")
        try:
            with self._db.session(tenant) as sess:
                sess.add(TenantRow(tenant_id=tenant, created_at=self._clock(), policy_json="{}"))
        except IntegrityError:
            raise Conflict("tenant exists (tenant ids are case-insensitive)") from None
        return self._keys.issue(tenant, ADMIN_USER, ADMIN_AGENT, "tenant_admin")

    def exists(self, tenant: str) -> bool:
        with self._db.session(tenant) as sess:
            return sess.get(TenantRow, tenant) is not None

    def require(self, tenant: str) -> None:
        if not self.exists(tenant):
            raise NotFound("no such tenant")

    def all(self) -> list[str]:
        """Every tenant id (through the narrow tenant-listing path on PostgreSQL)."""
        return self._db.tenant_ids()

    def set_policy(self, tenant: str, policy_json: str) -> None:
        with self._db.session(tenant) as sess:
            row = sess.get(TenantRow, tenant)
            if row is None:
                raise NotFound("no such tenant")
            row.policy_json = policy_json
