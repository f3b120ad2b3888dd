"""Startup upgrade of data written before A-MEM related notes instead of merging them.

Earlier versions folded one note's sentences into another (an "absorb"): the absorbed note was
soft-deleted, its point kept as an alias (`alias_of` in its payload) and the survivor's text
rewritten, with the text before each step kept in the survivor's sealed evolution history.
`restore_absorbed` undoes that, once per absorbed note:

- the absorbed note is live again, with its own text (its row kept it, sealed);
- the survivor's text goes back to its text before the first absorb (its writer's last text),
  unless it was changed after the last absorb (then the writer's change is kept);
- a relation takes the place of the alias: `duplicate_of` (a same-day merge), `supersedes`
  (EVOLVE), `expands` (EXPAND), or a plain link (consolidation, whose groups mixed all three).

Only soft-deleted notes that went through A-MEM are looked at, so a data dir without any costs
one statement per tenant.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault.drafts import namespace_for
from memvault.vault.links import put_link
from memvault.vault.relations import DUPLICATE_OF, EXPANDS, SUPERSEDES, put_relation

if TYPE_CHECKING:
    from memvault.vault.service import Vault

log = logging.getLogger(__name__)

KIND_OF_STEP = {"MERGE": DUPLICATE_OF, "EVOLVE": SUPERSEDES, "EXPAND": EXPANDS}
EDIT_MARGIN_S = 2.0
"""A survivor updated later than this after its last absorb was edited by its writer."""


def run_once(data_dir: Path, name: str, upgrade: Callable[[], object]) -> bool:
    """Run a one-time startup upgrade unless `data_dir/upgrades/<name>` records it done.

    Startup upgrades check every tenant (and may open a shard per tenant), so a server that
    ran them once skips them from then on: startup does not grow with the tenants. The record
    is written only when `upgrade` returns; one that raises runs again at the next start.
    Returns whether it ran.
    """
    record = Path(data_dir) / "upgrades" / name
    if record.exists():
        return False
    upgrade()
    record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    record.write_text("done\n", encoding="utf-8")
    return True


def restore_absorbed(vault: Vault, tenants: Sequence[str]) -> int:
    """Bring every absorbed note of `tenants` back (see the module); how many."""
    restored = 0
    for tenant in tenants:
        with vault.parts.db.session(tenant) as sess:
            rows = list(
                sess.execute(
                    select(NoteRow).where(
                        NoteRow.tenant_id == tenant,
                        NoteRow.is_active == 0,
                        NoteRow.enrichment.is_not(None),
                    )
                ).scalars()
            )
        if not rows:
            continue
        points = vault.parts.index.retrieve(namespace_for(tenant), [r.id for r in rows])
        alias = {p.id: p.payload.get("alias_of") for p in points}
        for row in rows:
            survivor_id = alias.get(row.id)
            if isinstance(survivor_id, str) and survivor_id:
                _restore_one(vault, row, survivor_id)
                restored += 1
    if restored:
        log.info("upgrade: %d absorbed notes restored as live notes with relations", restored)
    return restored


def _restore_one(vault: Vault, row: NoteRow, survivor_id: str) -> None:
    tenant = row.tenant_id
    with vault.parts.db.session(tenant) as sess:
        survivor = sess.get(NoteRow, (tenant, survivor_id))
    step = "LINK"
    if survivor is not None and survivor.is_active:
        step = _revert_survivor(vault, survivor, row.id)
    now = vault.parts.clock()
    with vault.parts.db.session(tenant) as sess:
        sess.execute(
            update(NoteRow)
            .where(NoteRow.tenant_id == tenant, NoteRow.id == row.id)
            .values(is_active=1, updated_at=now)
        )
        if survivor is not None and survivor.is_active:
            newer, older = (row.id, survivor.id) if row.id > survivor.id else (survivor.id, row.id)
            kind = KIND_OF_STEP.get(step)
            if kind is None or not put_relation(
                sess, tenant, row.user_id, newer, older, kind, None
            ):
                put_link(sess, tenant, row.user_id, newer, older, None)
    vault.parts.index.set_payload(namespace_for(tenant), [row.id], {"is_active": 1, "alias_of": ""})
    from memvault.vault.session_index import SessionIndexer

    with vault.parts.db.session(tenant) as sess:
        live = sess.get(NoteRow, (tenant, row.id))
    if live is not None:
        SessionIndexer(vault).refresh_successor(live, removed=False)


def _revert_survivor(vault: Vault, survivor: NoteRow, absorbed_id: str) -> str:
    """Give the survivor back its text from before its first absorb; the step that absorbed
    `absorbed_id` (`MERGE`, `EVOLVE`, `EXPAND`, `CONSOLIDATE`, or `LINK` when unknown)."""
    scope = vault.row_scope(survivor)
    text, attrs = vault.codec.open(
        scope, survivor.id, survivor.key_version, survivor.text_ct, survivor.attrs_ct
    )
    history: list[dict[str, Any]] = list(attrs.get("evolution_history", []))
    absorbs = [h for h in history if h.get("absorbed")]
    step = "LINK"
    for entry in absorbs:
        taken = entry.get("absorbed")
        if taken == absorbed_id or (isinstance(taken, list) and absorbed_id in taken):
            step = str(entry.get("action", "LINK"))
    if not absorbs:
        return step
    first, last = absorbs[0], absorbs[-1]
    edited = survivor.updated_at > float(last.get("at", 0.0)) + EDIT_MARGIN_S
    previous = first.get("previous")
    if edited or not isinstance(previous, str) or not previous or previous == text:
        _drop_absorb_history(vault, survivor.tenant_id, survivor.id)
        return step
    owner = vault.scoped(Scope(survivor.tenant_id, survivor.user_id, survivor.owner))
    owner.update(survivor.id, text=previous)
    _drop_absorb_history(vault, survivor.tenant_id, survivor.id)
    return step


def _drop_absorb_history(vault: Vault, tenant: str, note_id: str) -> None:
    """Remove the absorb steps from a note's sealed history: their `previous` texts held other
    notes' sentences, which now live in those notes alone."""
    with vault.note_lock(note_id), vault.parts.db.session(tenant) as sess:
        row = sess.get(NoteRow, (tenant, note_id))
        if row is None:
            return
        scope = vault.row_scope(row)
        text, attrs = vault.codec.open(scope, row.id, row.key_version, row.text_ct, row.attrs_ct)
        history = [h for h in attrs.get("evolution_history", []) if not h.get("absorbed")]
        history.append({"at": vault.parts.clock(), "action": "UNABSORB"})
        key_version, text_ct, attrs_ct = vault.codec.seal(
            scope, row.id, text, {**attrs, "evolution_history": history}
        )
        row.key_version, row.text_ct, row.attrs_ct = key_version, text_ct, attrs_ct
