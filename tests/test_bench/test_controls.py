"""`bench.controls` at a tiny size: each control's comparison runs and prints its ratio."""

from __future__ import annotations

import re

import pytest
from bench import controls


def test_the_session_header_control_prints_both_medians_and_their_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--control", "session-header", "--rounds", "2", "--per-round", "2"]
    assert controls.main(argv) == 0
    out = capsys.readouterr().out
    found = re.search(
        r"sqlite: search without X-Session-Id ([\d.]+) ms, with ([\d.]+) ms, ratio ([\d.]+)", out
    )
    assert found is not None, out
    without, with_header, ratio = (float(x) for x in found.groups())
    assert without > 0 and with_header > 0
    assert ratio == pytest.approx(with_header / without, rel=0.05)
