"""Key rotation: the master key (rewrap tenant keys) and data keys (re-encrypt, then destroy).

- **Master key.** `rotate_master_file` writes a new key file beside the configured one
  (`<MASTER_KEY_FILE>.new`, 0600), rewraps every tenant key in ONE keystore transaction, then
  installs the new file over the old one with an atomic rename. The old key stays in place until
  the rewrap committed, so a crash at any point leaves a keystore that opens with one of the two
  files; `finish_master_rotation` (run before the services open) tells which and completes or
  discards the leftover. `rotate_master_env` rewraps under a key from another environment
  variable (one transaction: the keystore opens with exactly one of the two).
- **Data keys.** `start_rotation` makes a new data key version current for the matching scopes
  and records a job (ids, versions and counts, in the keystore beside the keys). `run_rotation`
  re-encrypts every note of those scopes still under an older version (live and staged fields;
  batches, one transaction each, resumable: notes already current are skipped), verifies that
  none is left, then destroys the older versions and scrubs the keystore, except those still
  sealing a live idempotency record (`replay_keys`): the maintenance sweeper
  (`retire_held_versions`) destroys them once the records expired.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from memvault.compliance.master_rotation import (
    MasterRotation,
    finish_master_rotation,
    master_status,
    pending_master_file,
    rotate_master_env,
    rotate_master_file,
)
from memvault.compliance.replay_keys import RETIRING, retire_versions
from memvault.errors import DecryptionError, InvalidRequest, NotFound, VaultError
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.store.scoping import OwnedBy, scoped_select, scoped_update
from memvault.vault.writes import staged_view

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

__all__ = [
    "DONE",
    "MasterRotation",
    "RotationRecord",
    "finish_master_rotation",
    "load_rotation",
    "master_status",
    "pending_master_file",
    "retire_held_versions",
    "rotate_master_env",
    "rotate_master_file",
    "run_in_background",
    "run_rotation",
    "start_rotation",
    "unfinished_rotations",
]

Fault = Callable[[str], None]
Progress = Callable[["RotationRecord"], None]

REENCRYPTING = "reencrypting"
DONE = "done"
DEFAULT_BATCH = 200


def _no_fault(_step: str) -> None:
    return None


# -- data keys ------------------------------------------------------------------------------------


@dataclass(slots=True)
class RotationRecord:
    """One data key rotation and its re-encryption job. Ids, versions and counts only."""

    id: str
    tenant: str
    user: str | None
    agent: str | None
    scopes: list[tuple[str, str, int]]  # (user, agent, version made current)
    state: str = REENCRYPTING
    total: int = 0  # notes under older versions when the rotation started
    remaining: int = 0  # notes (live or staged) still under older versions
    reencrypted: int = 0  # notes whose live or staged fields were re-encrypted so far
    unreadable: int = 0  # notes that decrypted under no version (left as they were)
    versions_destroyed: int = 0
    versions_held: int = 0  # scopes keeping older versions for live idempotency records
    created_at: int = field(default_factory=lambda: int(time.time()))
    finished_at: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> RotationRecord:
        data = json.loads(raw)
        data["scopes"] = [tuple(s) for s in data["scopes"]]
        return cls(**data)

    def as_dict(self) -> dict[str, Any]:
        """The job as the API and CLI show it."""
        out = asdict(self)
        out["scopes"] = len(self.scopes)
        out["done"] = max(0, self.total - self.remaining)
        return out

    def progress_line(self) -> str:
        return (
            f"rotation {self.id}: re-encrypted {max(0, self.total - self.remaining)}/{self.total}"
            f" notes, {self.remaining} left, state {self.state}"
        )


def start_rotation(
    services: Services, tenant: str, user: str | None, agent: str | None, actor: str
) -> RotationRecord:
    """Make new data keys current for the matching scopes and record the re-encryption job."""
    OwnedBy(tenant, user, agent)  # validates the selector
    keyring = services.keyring
    scopes = []
    for scope in keyring.key_scopes(tenant, user, agent):
        scopes.append((scope.user, scope.agent, keyring.rotate_scope(scope)))
    record = RotationRecord(uuid.uuid4().hex, tenant, user, agent, scopes)
    record.total = record.remaining = _remaining(services, record)
    keyring.save_rotation(tenant, record.id, record.state, record.to_json())
    services.audit.record(
        tenant,
        actor,
        "keys.rotated",
        rotation_id=record.id,
        user_id=user,
        agent_id=agent,
        scopes=len(scopes),
        notes=record.total,
    )
    return record


def load_rotation(services: Services, tenant: str, rotation_id: str) -> RotationRecord:
    """The job, with `remaining` counted now; `NotFound` for an unknown id (or another tenant)."""
    raw = services.keyring.load_rotation(tenant, rotation_id)
    if raw is None:
        raise NotFound("no such rotation")
    record = RotationRecord.from_json(raw)
    if record.state != DONE:
        record.remaining = _remaining(services, record)
    return record


def unfinished_rotations(services: Services, tenant: str) -> list[str]:
    """Ids of the tenant's rotations whose re-encryption has not finished, oldest first."""
    return services.keyring.rotation_ids(tenant, REENCRYPTING)


def run_rotation(
    services: Services,
    tenant: str,
    rotation_id: str,
    actor: str,
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
    fault: Fault = _no_fault,
) -> RotationRecord:
    """Re-encrypt the job's notes, verify none is left, destroy the old versions. Resumable."""
    record = load_rotation(services, tenant, rotation_id)
    if record.state == DONE:
        return record
    skipped: set[str] = set()  # notes no version decrypts: already lost, never re-encrypted
    with _running(services, tenant, rotation_id):
        for _ in range(3):  # a note written with an older handle while we ran: go round again
            for user, agent, version in _live_scopes(services, record):
                scope = Scope(tenant, user, agent)
                _reencrypt_scope(services, record, scope, version, batch, skipped, progress, fault)
            record.remaining = _remaining(services, record)
            record.unreadable = len(skipped)
            if record.remaining <= len(skipped):
                break
        if record.remaining > len(skipped):
            services.keyring.save_rotation(tenant, record.id, record.state, record.to_json())
            raise VaultError("notes are still under older key versions: run the job again")
        fault("before_destroy")
        destroyed, record.versions_held = retire_versions(
            services, tenant, _live_scopes(services, record)
        )
        record.versions_destroyed += destroyed
        record.state, record.finished_at = DONE, int(time.time())
        stored = RETIRING if record.versions_held else record.state
        services.keyring.save_rotation(tenant, record.id, stored, record.to_json())
    services.audit.record(
        tenant,
        actor,
        "keys.reencrypted",
        rotation_id=record.id,
        notes=record.total,
        versions_destroyed=record.versions_destroyed,
    )
    if progress is not None:
        progress(record)
    return record


def retire_held_versions(services: Services) -> int:
    """A maintenance sweeper: destroy the older versions finished rotations kept for idempotency
    records that have expired since (`replay_keys`). Returns how many versions went."""
    destroyed = 0
    for tenant in services.keyring.rotation_tenants(RETIRING):  # not every tenant: one query
        for rotation_id in services.keyring.rotation_ids(tenant, RETIRING):
            raw = services.keyring.load_rotation(tenant, rotation_id)
            if raw is None:
                continue
            record = RotationRecord.from_json(raw)
            gone, record.versions_held = retire_versions(
                services, tenant, _live_scopes(services, record)
            )
            record.versions_destroyed += gone
            destroyed += gone
            stored = RETIRING if record.versions_held else record.state
            services.keyring.save_rotation(tenant, rotation_id, stored, record.to_json())
    return destroyed


_RUNNING: set[tuple[int, str, str]] = set()
_RUNNING_LOCK = threading.Lock()


@contextmanager
def _running(services: Services, tenant: str, rotation_id: str) -> Iterator[None]:
    key = (id(services), tenant, rotation_id)
    with _RUNNING_LOCK:
        if key in _RUNNING:
            raise InvalidRequest("this rotation's job is already running")
        _RUNNING.add(key)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(key)


def run_in_background(services: Services, tenant: str, rotation_id: str, actor: str) -> None:
    """Run (or resume) the job in a daemon thread; progress is read with `load_rotation`."""

    def work() -> None:
        with contextlib.suppress(Exception):  # the record keeps its state; a resume finishes it
            run_rotation(services, tenant, rotation_id, actor)

    threading.Thread(target=work, name=f"memvault-rotation-{rotation_id[:8]}", daemon=True).start()


def _live_scopes(services: Services, record: RotationRecord) -> list[tuple[str, str, int]]:
    """The job's scopes that still hold the version it made current.

    A scope shredded (erased) since lost every version; keys it got afterwards start again at 1
    and belong to no rotation, so the job leaves that scope alone.
    """
    return [
        (user, agent, version)
        for user, agent, version in record.scopes
        if version in services.keyring.key_versions(Scope(record.tenant, user, agent))
    ]


def _stale(row: NoteRow, version: int) -> tuple[bool, bool]:
    """(live fields under an older version, staged fields under an older version)."""
    staged = False
    if row.next_state is not None and row.next_text_ct is not None:
        staged = int(json.loads(row.next_state)["key_version"]) < version
    return row.key_version < version, staged


def _candidates(target: OwnedBy, version: int) -> Any:
    return scoped_select(target, or_(NoteRow.key_version < version, NoteRow.next_at.is_not(None)))


def _remaining(services: Services, record: RotationRecord) -> int:
    count = 0
    scopes = _live_scopes(services, record)
    with services.db.session(record.tenant) as sess:
        for user, agent, version in scopes:
            target = OwnedBy(record.tenant, user, agent)
            count += int(
                sess.execute(
                    select(func.count()).select_from(
                        scoped_select(target, NoteRow.key_version < version).subquery()
                    )
                ).scalar_one()
            )
            staged = sess.execute(
                scoped_select(target, NoteRow.key_version >= version, NoteRow.next_at.is_not(None))
            ).scalars()
            count += sum(1 for row in staged if _stale(row, version)[1])
    return count


def _reencrypt_scope(
    services: Services,
    record: RotationRecord,
    scope: Scope,
    version: int,
    batch: int,
    skipped: set[str],
    progress: Progress | None,
    fault: Fault,
) -> None:
    target = OwnedBy(scope.tenant, scope.user, scope.agent)
    after = ""
    while True:
        with services.vault.parts.guard.using(scope.tenant, scope.user, scope.agent):
            with services.db.session(scope.tenant) as sess:
                ids = list(
                    sess.execute(
                        _candidates(target, version)
                        .where(NoteRow.id > after)
                        .with_only_columns(NoteRow.id)
                        .order_by(NoteRow.id)
                        .limit(batch)
                    ).scalars()
                )
            if not ids:
                return
            after = ids[-1]
            with services.vault.note_lock(*ids):
                moved = _reencrypt_batch(services, record, scope, target, version, ids, skipped)
        fault("batch_committed")
        record.remaining = max(0, record.remaining - moved)  # recounted after each pass
        services.keyring.save_rotation(scope.tenant, record.id, record.state, record.to_json())
        if progress is not None:
            progress(record)


def _reencrypt_batch(
    services: Services,
    record: RotationRecord,
    scope: Scope,
    target: OwnedBy,
    version: int,
    ids: list[str],
    skipped: set[str],
) -> int:
    """Re-encrypt the stale fields of these notes in one transaction; returns the notes moved."""
    moved = 0
    codec = services.vault.codec
    with services.db.session(scope.tenant) as sess:  # one transaction per batch
        rows = sess.execute(_candidates(target, version).where(NoteRow.id.in_(ids))).scalars()
        for row in list(rows):
            live, staged = _stale(row, version)
            values: dict[str, Any] = {}
            try:
                if live:
                    text, attrs = codec.open(
                        scope, row.id, row.key_version, row.text_ct, row.attrs_ct
                    )
                    values["key_version"], values["text_ct"], values["attrs_ct"] = codec.seal(
                        scope, row.id, text, attrs
                    )
                if staged:
                    nxt = staged_view(row)
                    text, attrs = codec.open(
                        scope, row.id, nxt.key_version, nxt.text_ct, nxt.attrs_ct
                    )
                    state = json.loads(row.next_state or "{}")
                    state["key_version"], values["next_text_ct"], values["next_attrs_ct"] = (
                        codec.seal(scope, row.id, text, attrs)
                    )
                    values["next_state"] = json.dumps(state, sort_keys=True)
            except DecryptionError:
                skipped.add(row.id)
                continue
            if not values:
                continue
            result = sess.execute(
                scoped_update(
                    target,
                    NoteRow.id == row.id,
                    NoteRow.key_version == row.key_version,
                    NoteRow.next_at.is_(None)
                    if row.next_at is None
                    else NoteRow.next_at == row.next_at,
                    **values,
                )
            )
            if result.rowcount:  # type: ignore[attr-defined]  # 0: changed meanwhile, next pass
                record.reencrypted += 1
                moved += 1
    return moved
