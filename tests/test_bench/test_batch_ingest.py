"""`bench.batch_ingest`: its mem0 export is what the importer reads, and a tiny run completes."""

from __future__ import annotations

import pytest
from bench.batch_ingest import mem0_export, run

from memvault.client.importer import read_mem0


def test_the_generated_export_reads_as_mem0_records() -> None:
    records = read_mem0(mem0_export(["Alice keeps bees", "Ben rows on Sundays"]))
    assert [r.text for r in records] == ["Alice keeps bees", "Ben rows on Sundays"]
    assert all(r.problem is None for r in records)


@pytest.mark.slow
def test_a_small_run_reports_every_figure() -> None:
    report = run(notes=12, records=10, size=5, amem=False)
    assert report["batch_item_errors"] == 0 and report["import_added"] == 10
    for name in ("single_notes_per_s", "batch_notes_per_s", "import_records_per_s", "ratio"):
        assert report[name] > 0
