"""An erase reaches the key rotation records: no record may keep the erased user's ids.

Rotation jobs (`memvault.compliance.rotation`) are kept in the keystore with the scopes they
re-encrypt, ids in clear. The erase's `rows` step calls `forget_subject`; the deletion inventory
counts what is left with `count_subject`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault.compliance.replay_keys import RETIRING
from memvault.compliance.rotation import RotationRecord

if TYPE_CHECKING:
    from memvault.runtime.factory import Services


def forget_subject(services: Services, tenant: str, user: str, agent: str | None) -> int:
    """Remove an erased user's (or agent's) ids from the tenant's rotation records.

    A record whose selector is the subject is deleted (its work died with the keys); other
    records lose the subject's scopes. Returns how many records changed. Part of an erase.
    """
    changes: dict[str, tuple[str, str] | None] = {}
    retiring = set(services.keyring.rotation_ids(tenant, RETIRING))  # keep that stored state
    for rotation_id in services.keyring.rotation_ids(tenant):
        raw = services.keyring.load_rotation(tenant, rotation_id)
        if raw is None:
            continue
        record = RotationRecord.from_json(raw)
        if record.user == user and (agent is None or record.agent == agent):
            changes[rotation_id] = None
            continue
        kept = [s for s in record.scopes if not (s[0] == user and agent in (None, s[1]))]
        if len(kept) != len(record.scopes):
            record.scopes = kept
            stored = RETIRING if rotation_id in retiring else record.state
            changes[rotation_id] = (stored, record.to_json())
    services.keyring.forget_rotations(tenant, changes)
    return len(changes)


def count_subject(services: Services, tenant: str, user: str, agent: str | None) -> int:
    """How many rotation records still name the user (or agent): 0 after an erase."""
    count = 0
    for rotation_id in services.keyring.rotation_ids(tenant):
        raw = services.keyring.load_rotation(tenant, rotation_id)
        if raw is None:
            continue
        record = RotationRecord.from_json(raw)
        selector = record.user == user and (agent is None or record.agent == agent)
        if selector or any(s[0] == user and agent in (None, s[1]) for s in record.scopes):
            count += 1
    return count
