"""The open-partition table: at most `max_open` shards and, with a budget, their estimated
memory; the newest shard always stays; writes grow a shard's estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.errors import InvalidRequest
from memvault.index import EdgeIndex, PointFilter
from memvault.index._edge_shards import POINT_KIB, shard_cost_mib
from tests.test_index.shapes import DIM, axis, point

NS = "acme"


def _users(index: EdgeIndex, n: int, points: int = 1) -> None:
    for u in range(n):
        index.upsert(NS, [point(axis(i % DIM), user=f"u{u}") for i in range(points)])


def test_the_budget_closes_least_recently_used_partitions(tmp_path: Path) -> None:
    budget = 3 * shard_cost_mib(1) + 0.01
    index = EdgeIndex(tmp_path, DIM, max_open=100, memory_budget_mib=budget)
    _users(index, 6)
    opened = index.open_partitions()
    assert len(opened) == 3
    assert index.open_memory_mib() <= budget
    # the three most recent users stay open; every user's points are still there
    assert [p for _, p in opened] == [index.partition_path(NS, f"u{u}").name for u in (3, 4, 5)]
    for u in range(6):
        assert index.count(NS, PointFilter(user_id=f"u{u}")) == 1
    assert len(index.open_partitions()) == 3
    index.close()


def test_without_a_budget_only_max_open_bounds_the_table(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, max_open=4)
    _users(index, 6)
    assert len(index.open_partitions()) == 4
    index.close()


def test_a_shard_larger_than_the_budget_still_opens_alone(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, max_open=100, memory_budget_mib=0.5)
    _users(index, 3)
    assert len(index.open_partitions()) == 1
    assert index.count(NS, PointFilter(user_id="u0")) == 1  # reopened, the others closed
    assert [p for _, p in index.open_partitions()] == [index.partition_path(NS, "u0").name]
    index.close()


def test_writes_grow_the_estimate_and_a_reopen_counts_the_points(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path, DIM, max_open=100, memory_budget_mib=10_000)
    _users(index, 1, points=1)
    small = index.open_memory_mib()
    index.upsert(NS, [point(axis(i % DIM), user="u0") for i in range(300)])
    grown = index.open_memory_mib()
    assert grown == pytest.approx(small + 300 * POINT_KIB / 1024)
    index.close()
    assert index.count(NS, PointFilter(user_id="u0")) == 301
    assert index.open_memory_mib() == pytest.approx(shard_cost_mib(301))
    index.close()


def test_the_budget_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest):
        EdgeIndex(tmp_path, DIM, memory_budget_mib=0)


def test_the_settings_reach_the_index(tmp_path: Path, embedder: object, screen: object) -> None:
    from memvault.runtime.factory import open_services

    settings = Settings(data_dir=tmp_path / "d", index_max_open=7, index_memory_budget_mb=99)
    services = open_services(settings, embedder=embedder, screen=screen)  # type: ignore[arg-type]
    try:
        assert isinstance(services.index, EdgeIndex)
        assert (services.index.max_open, services.index.memory_budget_mib) == (7, 99)
    finally:
        services.close()
