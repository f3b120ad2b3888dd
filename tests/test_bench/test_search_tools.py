"""`bench.search_parts --fill`, `bench.edge_quantization`, `bench.search_overlap` and
`bench.edge_filters` on a tiny `bench.peers` store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench import edge_filters, edge_quantization, http_stack, peers, search_overlap, search_parts

pytestmark = pytest.mark.skipif(
    not (peers.PEERS_DIR / "workload.py").is_file(),
    reason=f"the shared peer workload is not at {peers.PEERS_DIR}",
)


def test_parts_in_the_writing_process_then_quantized_copies(
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

    store = tmp_path / "plain"  # a store as bench.peers leaves it, not optimized afterwards
    assert peers.main([*tiny[:6], "--no-reopen", "--data-dir", str(store)]) == 0
    capsys.readouterr()
    assert edge_quantization.main(["--data-dir", str(store), *tiny]) == 0
    out = capsys.readouterr().out
    rows = dict(re.findall(r"^round 1 (\S+)\s+(p50 .*)$", out, re.M))
    assert set(rows) == {"stored", "optimized", "int8", "int8+rescore"}, out
    queries = int(re.search(r"^(\d+) queries over 2 partitions", out, re.M)[1])  # type: ignore[index]
    assert queries > 0
    # Copies made from the stored points answer as the store does; rescoring restores the
    # exact cosines of the float vectors.
    for name in ("stored", "optimized", "int8+rescore"):
        assert f"top 10 in the same order {queries}/{queries}" in rows[name], rows[name]
        assert rows[name].endswith("score diff 0"), rows[name]
    assert re.search(r"optimize\(\) for int8: \d+ ms per partition, longest pause \d+ ms", out)


def test_search_overlap_times_every_arm_and_they_return_the_same_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    tiny = ["-T", "2", "-N", "20", "-Q", "5"]
    assert peers.main([*tiny, "--no-reopen", "--data-dir", str(store)]) == 0
    capsys.readouterr()
    args = ["--data-dir", str(store), *tiny, "--rounds", "2", "--modes", "full,hybrid,dense"]
    assert search_overlap.main(args) == 0
    out = capsys.readouterr().out
    assert "round 2/2 done" in out
    rows = re.findall(r"^  (\w+)\s+(now|no rows ahead|awaited first)\s+(p50 .*)$", out, re.M)
    assert sorted((mode, arm) for mode, arm, _ in rows) == sorted(
        (mode, arm) for mode in ("full", "hybrid", "dense") for arm in search_overlap.ARMS
    ), out
    for mode, arm, row in rows:
        found = re.fullmatch(
            r"p50 ([\d.]+) ms \(ratio to now ([\d.]+)\), mean [\d.]+ ms, CPU mean [\d.]+ ms,"
            r" same ids as now (\d+)/(\d+)",
            row,
        )
        assert found is not None, row
        assert float(found[1]) > 0 and found[4] == "20", row  # 2 users x 5 queries x 2 rounds
        if arm == "now":
            assert found[2] == "1.000" and found[3] == "20", row
        elif mode != "full":  # full mode's heat may move between the arms' searches
            assert found[3] == "20", row


def test_http_stack_prices_a_search_request_and_restores_what_it_stubbed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memvault.vault.service import ScopedVault

    search = ScopedVault.search
    assert http_stack.main(["--requests", "30"]) == 0
    assert http_stack.main(["--requests", "30", "--without", "audit,observer"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"search request, vault stubbed, everything: CPU \d+ µs .*", out[0])
    assert re.fullmatch(r"search request, .*without audit, observer: CPU \d+ µs .*", out[1])
    assert ScopedVault.search is search
    with pytest.raises(SystemExit, match="--without takes"):
        http_stack.main(["--without", "screen"])


def test_edge_filters_times_every_variant_fresh_and_in_the_writing_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    tiny = ["-T", "2", "-N", "20", "-Q", "5", "--rounds", "1"]
    assert edge_filters.main(["--data-dir", str(store), *tiny, "--fill"]) == 0
    assert edge_filters.main(["--data-dir", str(store), *tiny]) == 0
    out = capsys.readouterr().out
    for where in ("writing process", "fresh process"):
        assert f"{where}: 10 queries x 1 rounds, engine call only, limit 50" in out, out
    rows = re.findall(r"^  (dense|sparse), (.+?)\s+p50 ([\d.]+) ms  mean ([\d.]+) ms$", out, re.M)
    names = {f"{kind}, {name}" for kind, name, _, _ in rows}
    assert len(names) == len(edge_filters.variants()) == 11, names
    assert len(rows) == 22  # every variant, in both processes
    assert all(float(p50) > 0 and float(mean) > 0 for _, _, p50, mean in rows)
