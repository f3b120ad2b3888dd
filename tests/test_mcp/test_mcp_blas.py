"""`memvault mcp --embedded` caps BLAS for its process while its services run, as `memvault
serve` does (an idle OpenBLAS worker otherwise spins between forward passes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from threadpoolctl import threadpool_info

from memvault.cli.mcp import open_backend
from tests.conftest import ServicesFactory


def _blas_threads() -> set[int]:
    return {int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"}


def test_embedded_mcp_caps_blas_until_its_services_close(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    services = make_services(data_dir=tmp_path / "data")
    services.tenants.create("acme")
    key = services.keys.issue("acme", "alice", "main", "agent").api_key
    before = _blas_threads()
    cap = services.settings.embed_threads
    if not before or before == {cap}:
        pytest.skip(f"BLAS already runs {cap} thread(s) here: a cap would not show")
    open_backend(
        key,
        embedded=True,
        url="",
        settings=services.settings,
        lock_data_dir=lambda _settings: None,
        open_services=lambda _settings, _lock: services,
    )
    assert _blas_threads() == {cap}
    services.close()
    assert _blas_threads() == before
