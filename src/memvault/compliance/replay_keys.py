"""Old data key versions a rotation keeps while idempotency records are sealed under them.

A data key rotation re-encrypts every note of its scopes, then destroys the older versions. An
idempotency record (a sealed reply, kept 24 h for a retry to replay) cannot be re-encrypted: its
associated data binds the client's `Idempotency-Key`, which is not stored. So the rotation keeps
the oldest version still sealing a live record of the scope (`replay_floor`) and every newer
one, and the maintenance sweeper (`rotation.retire_held_versions`) destroys them once those
records expired. No note is under them any more. An erase shreds every version of its scope,
held ones included.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memvault.scope import Scope
from memvault.store.idempotency_records import TTL_SECONDS, sealing_versions

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

RETIRING = "retiring"
"""The stored state of a finished rotation that still keeps older versions for replays (its
record says `done`: every note is re-encrypted)."""


def replay_floor(services: Services, scope: Scope, version: int, now: float) -> int:
    """The oldest version of `scope` a live idempotency record is sealed under, if older than
    `version` (and still held by the keystore); else `version`."""
    held = set(services.keyring.key_versions(scope))
    with services.db.session(scope.tenant) as sess:
        sealing = sealing_versions(
            sess, scope.tenant, scope.user, scope.agent, live_after=now - TTL_SECONDS
        )
    return min([v for v in sealing if v in held and v < version] + [version])


def retire_versions(
    services: Services, tenant: str, scopes: list[tuple[str, str, int]], now: float | None = None
) -> tuple[int, int]:
    """Destroy the versions older than each scope's `version` that no live record needs.

    `scopes`: (user, agent, version made current). Returns (versions destroyed, scopes that
    still keep older versions for replays).
    """
    at = time.time() if now is None else now
    destroyed = held = 0
    for user, agent, version in scopes:
        scope = Scope(tenant, user, agent)
        floor = replay_floor(services, scope, version, at)
        destroyed += services.keyring.destroy_versions_below(scope, floor)
        held += floor < version
    return destroyed, held
