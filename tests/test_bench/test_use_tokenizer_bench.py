"""`bench.use_tokenizer` on a few workload texts: one line per round, both tokenizers timed."""

from __future__ import annotations

import re

import pytest
from bench import peers, use_tokenizer

pytestmark = pytest.mark.skipif(
    not (peers.PEERS_DIR / "workload.py").is_file(),
    reason=f"the shared peer workload is not at {peers.PEERS_DIR}",
)


def test_each_round_times_both_tokenizers(capsys: pytest.CaptureFixture[str]) -> None:
    use_tokenizer.main(["--texts", "20", "--rounds", "2"])
    out = capsys.readouterr().out
    assert re.search(r"^20 texts, \d+ of them tokenized by the port", out, re.M), out
    rounds = re.findall(r"^round (\d): port ([\d.]+) ms/text, fast ([\d.]+) ms/text", out, re.M)
    assert [r[0] for r in rounds] == ["1", "2"]
    assert all(float(port) > 0 and float(fast) > 0 for _, port, fast in rounds)
