"""`Idempotency-Key` on POST, PATCH and DELETE: a retried write replays its first response.

Stripe's contract, per principal (tenant + API key id), for 24 hours:

- the same key with the same request (method, path, query string, body digest) replays the first
  response (status, headers, body) with `Idempotent-Replayed: true`, without running it again;
- the same key with another request is 409 `idempotency_key_reused`;
- the same key while its first request still runs is 409 `idempotency_key_in_progress`;
- 5xx, 401 and 429 responses are not stored: the key is released and a retry runs again.

It is a pure ASGI middleware (`install_idempotency(app)`): it authenticates the caller with the
same `ApiKeys.authenticate` as the routes (a bad key passes through to the route's 401), buffers
the request body (bounded) and replays it to the app, and captures the response before sending it.

At rest nothing is in clear: the client's key and the request digest are HMAC tags under the
tenant's index key; the response is AES-256-GCM under the principal's scope key
(`Keyring.aead_for(Scope(tenant, user, agent))` of the key row), with associated data binding
purpose, tenant, user, agent, key id, the idempotency key and the request tag. Erasing the scope
shreds that key; a record that no longer decrypts is treated as absent. The operator key has no
tenant and no scope key: its requests are executed normally and never stored.

Every database access goes through `Database.session(tenant)` (PostgreSQL row-level security).
See docs/idempotency.md.

Layout: `_keys` (header grammar, request digest, HMAC tags, sealed-response format),
`_engine` (`IdempotencyEngine`: reserve, replay, store, release, lease renewal) and
`_middleware` (the ASGI middleware, response capture, `install_idempotency`).
"""

from memvault.api.idempotency._keys import request_digest
from memvault.api.idempotency._middleware import install_idempotency
from memvault.store.idempotency_records import (
    TTL_SECONDS,
    count_idempotency_records,
    delete_idempotency_records,
    delete_tenant_idempotency_records,
    idempotency_sweeper,
    purge_expired,
)

__all__ = [
    "TTL_SECONDS",
    "count_idempotency_records",
    "delete_idempotency_records",
    "delete_tenant_idempotency_records",
    "idempotency_sweeper",
    "install_idempotency",
    "purge_expired",
    "request_digest",
]
