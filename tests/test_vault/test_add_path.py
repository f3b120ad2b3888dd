"""The add path at the floor: one write transaction per add, the duplicate check folded into the
insert, corpus statistics counted in the same transaction, and the audit append's guarded head."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import delete, select

from memvault.index.base import PointFilter
from memvault.store.corpus import DEFAULT_AVGDL
from memvault.store.models import AuditEventRow, CorpusStatsRow, NoteRow
from memvault.vault.service import PENDING
from tests._helpers import tenant_vault
from tests.conftest import ServicesFactory
from tests.db_probes import write_transactions


def _stats(services: Any) -> tuple[int, int]:
    with services.db.session("t1") as sess:
        row = sess.execute(
            select(CorpusStatsRow.doc_count, CorpusStatsRow.token_total).where(
                CorpusStatsRow.tenant_id == "t1"
            )
        ).one()
    return int(row[0]), int(row[1])


# Alone on the cluster: on PostgreSQL the probe counts transaction ids, which are cluster-wide, so
# another xdist worker's transactions in the same window would count as this add's.
@pytest.mark.cluster_exclusive
def test_a_warm_add_commits_exactly_one_transaction(
    make_services: ServicesFactory, backend: str
) -> None:
    services, vault = tenant_vault(make_services, backend)
    vault.add("Warm the policy cache and the corpus statistics first")
    assert (
        write_transactions(
            services, backend, lambda: vault.add("The user's dentist appointment moved to Thursday")
        )
        == 1
    )
    assert write_transactions(services, backend, lambda: None) == 0  # the count can be zero


def test_a_duplicate_is_refused_by_the_insert_and_its_vector_dropped(
    make_services: ServicesFactory, backend: str
) -> None:
    services, vault = tenant_vault(make_services, backend)
    first = vault.add("The user's favourite tea is genmaicha")
    again = vault.add("The user's favourite tea is genmaicha")
    batch = vault.add_many([])  # nothing to store is fine
    assert batch == [] and again.id == first.id and again.text == first.text
    with services.db.session("t1") as sess:
        assert list(sess.execute(select(NoteRow.id)).scalars()) == [first.id]
    assert services.index.scroll_ids("t1", PointFilter()) == [first.id]
    assert _stats(services)[0] == 1  # the refused twin was not counted


def test_a_deleted_twin_no_longer_blocks_an_add(make_services: ServicesFactory) -> None:
    _, vault = tenant_vault(make_services)
    first = vault.add("The user parks on level three")
    vault.delete(first.id)
    second = vault.add("The user parks on level three")
    assert second.id != first.id
    assert [h.note.id for h in vault.search("where does the user park?")] == [second.id]


def test_corpus_statistics_count_every_stored_add(make_services: ServicesFactory) -> None:
    services, vault = tenant_vault(make_services)
    corpus = services.vault.parts.corpus
    assert corpus.avgdl_with("t1", "t1", 0, 0) == DEFAULT_AVGDL
    texts = ["Alpha beta gamma delta", "Lisbon flight at seven", "Genmaicha tea, no sugar"]
    for text in texts:
        vault.add(text)
    with services.db.session("t1") as sess:
        tokens = sum(sess.execute(select(NoteRow.token_count)).scalars())
    assert _stats(services) == (3, tokens)
    assert corpus.avgdl_with("t1", "t1", 0, 0) == pytest.approx(max(1.0, tokens / 3))
    services.vault.parts.corpus.forget_tenant("t1")  # a fresh process reads them back
    assert corpus.avgdl_with("t1", "t1", 1, 5) == pytest.approx(max(1.0, (tokens + 5) / 4))


def test_the_reconciler_still_completes_a_pending_row(make_services: ServicesFactory) -> None:
    # Rows left `pending` by the earlier three-step add protocol are still repaired.
    services, vault = tenant_vault(make_services)
    note = vault.add("The user's flight to Lisbon leaves at seven")
    with services.db.session("t1") as sess:
        row = sess.get(NoteRow, ("t1", note.id))
        assert row is not None
        row.status = PENDING
    services.index.delete("t1", [note.id])
    assert vault.search("when is the flight?") == []
    report = services.reconciler.run(grace_seconds=0)
    assert report.completed == 1
    assert [h.note.id for h in vault.search("when is the flight?")] == [note.id]


def test_the_audit_chain_restarts_cleanly_when_its_rows_are_gone(
    make_services: ServicesFactory, backend: str
) -> None:
    # The appender keeps the head it last wrote; a deleted chain must not leave a gap.
    services = make_services(backend)
    services.tenants.create("t1")
    audit = services.audit
    for n in range(3):
        audit.record("t1", "key1", "note.added", count=n)
    assert audit.head("t1")[0] == 3
    with services.db.session("t1") as sess:
        sess.execute(delete(AuditEventRow).where(AuditEventRow.tenant_id == "t1"))
    event_ = audit.record("t1", "key1", "note.added", count=9)
    assert event_["seq"] == 1 and audit.verify("t1")
