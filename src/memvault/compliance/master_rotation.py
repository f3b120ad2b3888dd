"""Master key rotation: rewrap every tenant key (and the signing keys) under a new master key.

`rotate_master_file` writes a new key file beside the configured one (`<MASTER_KEY_FILE>.new`,
0600), rewraps every tenant key in ONE keystore transaction, then installs the new file over the
old one with an atomic rename. The old key stays in place until the rewrap committed, so a crash
at any point leaves a keystore that opens with one of the two files; `finish_master_rotation`
(run before the services open) tells which and completes or discards the leftover.
`rotate_master_env` rewraps under a key from another environment variable (one transaction: the
keystore opens with exactly one of the two). Re-exported by `memvault.compliance.rotation`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.errors import InvalidRequest, KeyNotFound, VaultError
from memvault.keyring import (
    EnvMasterKey,
    FileMasterKey,
    Keyring,
    MasterKeyProvider,
    install_master_key_file,
    remove_master_key_file,
)

if TYPE_CHECKING:
    from memvault.config import Settings
    from memvault.runtime.factory import Services

Fault = Callable[[str], None]


def _no_fault(_step: str) -> None:
    return None


# -- master key -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MasterRotation:
    """What a master rotation did: key ids (public), the tenant keys rewrapped, and a note."""

    old_key_id: str
    new_key_id: str
    tenant_keys: int
    message: str


def pending_master_file(settings: Settings) -> Path:
    """Where a file rotation writes the new master key before installing it."""
    current = settings.resolved_master_key_file()
    return current.with_name(current.name + ".new")


def _opens(keystore_url: str, master: MasterKeyProvider) -> bool:
    try:
        Keyring.open(keystore_url, master).close()
    except KeyNotFound:
        return False
    return True


def finish_master_rotation(settings: Settings) -> str | None:
    """Settle a file rotation a crash interrupted; returns what was done, or None if nothing.

    Run it before the services open (and while DATA_DIR is locked). If the keystore opens with
    the pending new key (the rewrap committed), the new key is installed; otherwise the rewrap
    never committed, the keystore opens with the current key and the pending file is removed.
    """
    if settings.master_key_env:
        return None
    pending = pending_master_file(settings)
    if not pending.exists():
        return None
    url = settings.resolved_keystore_url()
    new = FileMasterKey(pending)
    current = FileMasterKey(settings.resolved_master_key_file())
    if new.key_id != current.key_id and _opens(url, new) and not _opens(url, current):
        install_master_key_file(pending, settings.resolved_master_key_file())
        return (
            f"an interrupted master rotation had committed: the keystore opens with the new "
            f"master key {new.key_id}, now installed in place of {current.key_id}"
        )
    remove_master_key_file(pending)
    return (
        f"an interrupted master rotation had not committed: the keystore opens with the "
        f"current master key {current.key_id}; the unused new key was removed"
    )


def master_status(settings: Settings, new_env: str | None = None) -> str:
    """Which master key opens the keystore (ids only): the configured one, a pending one, both."""
    url = settings.resolved_keystore_url()
    candidates: list[tuple[str, MasterKeyProvider]] = []
    if settings.master_key_env:
        candidates.append(
            (
                f"MEMVAULT_MASTER_KEY_ENV ({settings.master_key_env})",
                EnvMasterKey(settings.master_key_env),
            )
        )
    else:
        candidates.append(
            ("MEMVAULT_MASTER_KEY_FILE", FileMasterKey(settings.resolved_master_key_file()))
        )
        pending = pending_master_file(settings)
        if pending.exists():
            candidates.append(("the pending new key file (.new)", FileMasterKey(pending)))
    if new_env:
        candidates.append((f"environment variable {new_env}", EnvMasterKey(new_env)))
    opening = [f"{name} (key id {m.key_id})" for name, m in candidates if _opens(url, m)]
    if not opening:
        return "the keystore opens with none of the given master keys"
    return "the keystore opens with " + " and with ".join(opening)


def rotate_master_file(services: Services, actor: str, fault: Fault = _no_fault) -> MasterRotation:
    """Rotate to a newly generated master key file (see the module docstring for the steps)."""
    settings = services.settings
    if settings.master_key_env:
        raise InvalidRequest(
            "the master key comes from an environment variable: give the new one's variable "
            "(--new-master-key-env / new_master_key_env)"
        )
    current_path = settings.resolved_master_key_file()
    pending = pending_master_file(settings)
    with contextlib.suppress(FileNotFoundError):
        pending.unlink()  # never used: the keystore opened with the current key
    old_id = services.keyring.master_key_id
    new = FileMasterKey(pending)  # created 0600, fsynced, linked into place atomically
    fault("new_key_written")
    count = services.keyring.rotate_master(new)
    fault("rewrapped")
    install_master_key_file(pending, current_path)
    fault("installed")
    _audit_master(services, actor, count, new.key_id)
    return MasterRotation(old_id, new.key_id, count, "the new master key file is installed")


def rotate_master_env(
    services: Services, new_env: str, actor: str, fault: Fault = _no_fault
) -> MasterRotation:
    """Rewrap every tenant key under the key in environment variable `new_env`."""
    try:
        new = EnvMasterKey(new_env)
    except VaultError as exc:  # unset, not base64, wrong length: names the variable only
        raise InvalidRequest(exc.message) from None
    old_id = services.keyring.master_key_id
    if new.key_id == old_id:
        raise InvalidRequest(f"{new_env} holds the current master key")
    fault("new_key_read")
    count = services.keyring.rotate_master(new)
    fault("rewrapped")
    _audit_master(services, actor, count, new.key_id)
    return MasterRotation(
        old_id,
        new.key_id,
        count,
        f"set MEMVAULT_MASTER_KEY_ENV={new_env} before the next start: only that key opens "
        "the keystore now",
    )


def _audit_master(services: Services, actor: str, count: int, new_key_id: str) -> None:
    for tenant in services.db.tenant_ids():  # a deployment-wide event: one per tenant
        services.audit.record(
            tenant, actor, "master.rotated", tenants=count, master_key_id=new_key_id
        )
