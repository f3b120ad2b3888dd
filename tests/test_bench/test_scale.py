"""`bench.scale`: the CLI dispatches to its scenarios, and a tiny erase scenario reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.scale import SCENARIOS, main, parser_for


def test_every_scenario_is_a_choice_and_the_erase_options_are_there() -> None:
    parser = parser_for(["erase"])
    args = parser.parse_args(["--scenario", "erase", "--erase-notes", "5"])
    assert args.scenario == "erase" and args.erase_notes == 5
    assert set(SCENARIOS) == {"big", "many", "erase", "scrub"}


@pytest.mark.slow
def test_a_tiny_erase_run_reports_its_ratio(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = ["--scenario", "erase", "--erase-notes", "30", "--tenant-notes", "60"]
    assert main([*argv, "--before-s", "0.3", "--batch", "20", "--out", str(out)]) == 0
    erase = json.loads(out.read_text())["scenarios"]["erase"]
    assert erase["all_verified"] and erase["tenant_notes"] == 60
    assert erase["erase_user"]["searches_before"] > 0 and erase["p95_ratio"] is not None


def test_the_big_scenario_defaults_to_the_vault_level() -> None:
    args = parser_for(["big"]).parse_args(["--scenario", "big", "--sizes", "10", "20"])
    assert args.level == "vault" and args.sizes == [10, 20] and args.fill_batch == 256


@pytest.mark.slow
def test_a_tiny_vault_level_big_run_builds_the_index_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "big.json"
    argv = ["--scenario", "big", "--sizes", "60", "200", "--hnsw-min-points", "100"]
    assert main([*argv, "--queries", "3", "--fill-batch", "50", "--out", str(out)]) == 0
    big = json.loads(out.read_text())["scenarios"]["big"]
    assert big["level"] == "vault" and (big["small_size"], big["big_size"]) == (60, 200)
    # The partition passed the threshold during the fill; the maintenance sweeper built it.
    assert big["hnsw_pending_before"] and big["hnsw_built"]
    for phase in ("small", "small_after_add", "big_exact", "big_hnsw", "big_hnsw_after_edit"):
        assert all(big[phase][m]["p50_ms"] > 0 for m in ("full", "hybrid", "dense"))
    # 200 points are under the engine's full-scan threshold: the dense search stays exact.
    assert big["recall_at_10"]["dense"] == 1.0 and big["exact_repeat_recall"]["dense"] == 1.0
    assert big["full_p50_ratio_hnsw"] > 0 and big["maintenance_build_s"] >= 0
    assert big["full_p50_ratio_after_add"] > 0 and big["full_p50_ratio_after_edit"] > 0
