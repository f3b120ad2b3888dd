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
    assert set(SCENARIOS) == {"big", "many", "erase"}


@pytest.mark.slow
def test_a_tiny_erase_run_reports_its_ratio(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = ["--scenario", "erase", "--erase-notes", "30", "--tenant-notes", "60"]
    assert main([*argv, "--before-s", "0.3", "--batch", "20", "--out", str(out)]) == 0
    erase = json.loads(out.read_text())["scenarios"]["erase"]
    assert erase["all_verified"] and erase["tenant_notes"] == 60
    assert erase["erase_user"]["searches_before"] > 0 and erase["p95_ratio"] is not None
