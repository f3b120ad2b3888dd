"""Who may scrape `/metrics`: the operator key, or the metrics token from settings.

The counters name every tenant's routes, statuses and refusals, so `/metrics` is not public.
Each presented bearer token is compared with every accepted credential in constant time
(`hmac.compare_digest` over SHA-256 digests, so neither the length nor a prefix leaks).
"""

from __future__ import annotations

import hashlib
import hmac

from memvault.runtime.factory import Services


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def metrics_credentials(services: Services, operator_key: str | None) -> tuple[bytes, ...]:
    """The SHA-256 digests of the credentials that may read `/metrics` (possibly none)."""
    tokens = [operator_key]
    token = services.settings.metrics_token
    tokens.append(None if token is None else token.get_secret_value())
    return tuple(_digest(t) for t in tokens if t)


def bearer_matches(authorization: str, accepted: tuple[bytes, ...]) -> bool:
    """Whether `Authorization: Bearer <token>` carries one of the `accepted` credentials."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    presented = _digest(token.strip())
    matched = False
    for digest in accepted:  # no early exit: every credential is compared
        matched |= hmac.compare_digest(presented, digest)
    return matched
