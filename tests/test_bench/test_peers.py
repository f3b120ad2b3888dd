"""`bench.peers` runs memvault on the shared peer workload and prints the mem0 harness's fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench import peers

pytestmark = pytest.mark.skipif(
    not (peers.PEERS_DIR / "workload.py").is_file(),
    reason=f"the shared peer workload is not at {peers.PEERS_DIR}",
)


def test_shared_workload_matches_the_published_fingerprint() -> None:
    workload = peers.shared("workload").Workload(tenants=10, memories_per_user=1000)
    assert workload.fingerprint().startswith(peers.FINGERPRINTS[1000])


def test_tiny_run_prints_the_peer_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "results.jsonl"
    data_dir = tmp_path / "data"
    argv = ["-T", "2", "-N", "20", "-Q", "5", "--no-reopen"]
    assert peers.main([*argv, "--data-dir", str(data_dir), "--out", str(out_file)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    result = json.loads(line)
    assert json.loads(out_file.read_text(encoding="utf-8").strip()) == result

    assert result["system"] == "memvault"
    assert result["workload"]["memories"] == 40
    assert len(result["workload"]["fingerprint"]) == 64
    assert result["config"]["write_screen"] is True
    assert result["add"]["memories_per_s"] > 0
    assert result["add"]["call_latency"]["n"] == 40
    for mode in ("dense", "hybrid", "full"):
        search = result["search_modes"][mode]
        assert search["latency"]["n"] == 10
        assert search["latency"]["p50_ms"] > 0
        assert search["recall_at_10"] > 0
        assert search["foreign_scope_results"] == 0
    assert result["search"] == result["search_modes"]["full"]
    assert result["memory"]["peak_rss_mib"] > 0
    assert result["memory"]["smaps_mib"]
    assert result["disk"]["total_mib"] > 0
    # Notes are encrypted at rest; the deleted probe is gone from every file too.
    assert result["plaintext_at_rest"]["files_with_hits"] == {}
    assert (data_dir / peers.MARKER).exists()


def test_refuses_to_wipe_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("not ours", encoding="utf-8")
    with pytest.raises(SystemExit, match="refusing to wipe"):
        peers.prepare_dir(tmp_path)
    assert (tmp_path / "keep.txt").exists()
