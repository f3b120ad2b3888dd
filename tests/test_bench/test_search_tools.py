"""`bench.search_parts --fill` on a tiny `bench.peers` store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench import peers, search_parts

pytestmark = pytest.mark.skipif(
    not (peers.PEERS_DIR / "workload.py").is_file(),
    reason=f"the shared peer workload is not at {peers.PEERS_DIR}",
)


def test_parts_in_the_writing_process_then_reopened_and_quantized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "store"
    tiny = ["-T", "2", "-N", "20", "-Q", "5", "--rounds", "1"]
    # Hybrid mode: full mode's heat moves with every pass's retrievals, so only a mode without
    # it can show that reopening or quantizing the partitions changes no result.
    then = ["--mode", "hybrid", "--then-reopen", "--trim", "--then-optimize", "--quantize"]
    assert search_parts.main(["--data-dir", str(data_dir), *tiny, "--fill", *then]) == 0
    out = capsys.readouterr().out
    found = re.search(r"hybrid, writing process: (\d+) searches, p50 ([\d.]+) ms", out)
    assert found is not None, out
    assert int(found[1]) > 0 and float(found[2]) > 0
    for part in ("embed_query", "edge dense", "edge sparse", "hydrate", "other"):
        assert len(re.findall(rf"^\s+{part}\s+[\d.]+ ms/search$", out, re.M)) == 3, part
    assert "writing process, partitions reopened:" in out
    for rss in ("before closing", "after closing and malloc_trim", "with the partitions reopened"):
        assert re.search(rf"^  RSS {rss}: [1-9][\d.]* MiB$", out, re.M), rss
    assert re.search(r"a child process optimized 2 partitions in [\d.]+ s", out)
    assert "writing process, partitions quantized in a child:" in out
    # Reopened, then quantized (and rescored), the partitions answer every query as before.
    same = re.findall(r"results as in the writing process: (\d+)/(\d+) queries", out)
    assert len(same) == 2 and all(x == y and int(y) > 0 for x, y in same), same
    assert (data_dir / peers.MARKER).exists()  # the store bench.peers filled stays for reuse
