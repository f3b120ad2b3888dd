"""`bench.absorb` runs end to end on a small store and reports both timings."""

from __future__ import annotations

from pathlib import Path

from bench.absorb import run


def test_the_absorb_bench_reports_the_absorb_and_its_alias_scroll(tmp_path: Path) -> None:
    result = run(notes=12, absorbs=3, root=tmp_path)
    assert result["notes"] == 12 and result["absorbs"] == 3
    assert result["absorb_p50_ms"] > 0
    assert 0 < result["alias_scroll_p50_ms"] < result["absorb_p50_ms"]
