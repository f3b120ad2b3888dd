"""Dependencies: the services, the authenticated principal and role checks.

The ones that do no I/O are `async def`, so FastAPI runs them on the event loop instead of
sending each to the thread pool (a hop per dependency per request); only the key lookup
(SQL, when the key is not in `ApiKeys`' cache) and the endpoints themselves run in threads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from anyio import to_thread
from fastapi import Depends, Request

from memvault.errors import Forbidden, InvalidRequest
from memvault.runtime.factory import Services
from memvault.tenancy.principals import (
    Principal,
)
from memvault.vault.service import ScopedVault


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


AUTHENTICATED = "memvault_principal"
"""Request-state slot where a middleware that already authenticated the request (idempotency)
leaves `(authorization header, principal)`, so the key is looked up once per request."""


async def get_principal(request: Request, services: ServicesDep) -> Principal:
    """The caller, from `Authorization: Bearer <key>`; 401 for anything else.

    A key verified recently (`ApiKeys.present`) is answered on the event loop; only a key that
    needs a database read goes to the thread pool, so most requests make one thread hop (the
    endpoint's), not two.
    """
    header = request.headers.get("authorization", "")
    known = getattr(request.state, AUTHENTICATED, None)
    if known is not None and known[0] == header:
        authenticated: Principal = known[1]
        return authenticated
    found = services.keys.present(header, request.app.state.operator_key)
    if isinstance(found, Principal):
        return found
    return await to_thread.run_sync(services.keys.verify, found)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def check_role(principal: Principal, roles: tuple[str, ...]) -> Principal:
    """`principal` when its role is one of `roles`; `Forbidden` otherwise."""
    if principal.role not in roles:
        raise Forbidden(f"this endpoint needs role {' or '.join(roles)}")
    return principal


def require_role(*roles: str) -> Callable[[Principal], Awaitable[Principal]]:
    """A dependency that admits only principals of one of `roles` (`check_role`)."""

    async def check(principal: PrincipalDep) -> Principal:
        return check_role(principal, roles)

    return check


AgentDep = Annotated[Principal, Depends(require_role("agent"))]
AdminDep = Annotated[Principal, Depends(require_role("tenant_admin"))]
AuditReaderDep = Annotated[Principal, Depends(require_role("tenant_admin", "auditor"))]
OperatorDep = Annotated[Principal, Depends(require_role("operator"))]


async def get_scoped_vault(principal: AgentDep, services: ServicesDep) -> ScopedVault:
    return services.vault.scoped(principal.scope, dedicated=principal.dedicated)


ScopedVaultDep = Annotated[ScopedVault, Depends(get_scoped_vault)]


def only_query_params(*allowed: str) -> Callable[[Request], Awaitable[None]]:
    """Reject query parameters we do not know (a scope in a query string is a 422)."""

    async def check(request: Request) -> None:
        unknown = sorted(set(request.query_params) - set(allowed))
        if unknown:
            raise InvalidRequest(f"unknown query parameters: {', '.join(unknown)}")

    return check


def tenant_of(principal: Principal) -> str:
    """The tenant of a tenant-bound principal; `InvalidRequest` for the operator."""
    tenant: str | None = principal.tenant
    if tenant is None:
        raise InvalidRequest("this key has no tenant")
    return tenant
