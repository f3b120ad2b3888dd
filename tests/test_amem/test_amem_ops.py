"""A-MEM's background parts: the worker applies LLM enrichment within seconds, the 02:30
scheduler consolidates in the tenant's timezone, and the CLI commands run on a data dir."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anthropic

from memvault.amem.schedule import ConsolidationScheduler, due
from memvault.amem.wiring import install
from memvault.config import Settings
from memvault.runtime.factory import open_services
from memvault.scope import Scope
from memvault.testing.fake_messages import FakeMessagesServer
from tests.conftest import ServicesFactory
from tests.serving import clean_env
from tests.test_amem._replies import CONSTRUCT, construct_reply, prompt_of

A = Scope("t1", "u1", "a1")


def _construct(_body: Any) -> str:
    if CONSTRUCT in prompt_of(_body):
        return construct_reply(["greyhound"], ["pets"], "A pet the user adopted.")
    return json.dumps({"links": []})


def test_the_worker_applies_llm_enrichment_within_seconds(make_services: ServicesFactory) -> None:
    services = make_services("sqlite", amem=True)
    services.tenants.create("t1")
    with FakeMessagesServer(responder=_construct) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        install(services, llm_client=client, scheduler=False)
        v = services.vault.scoped(A)
        note = v.add("The user adopted a greyhound called Pixel")
        assert note.enrichment == "pending"
        assert v.search("greyhound Pixel", limit=1)[0].note.id == note.id  # searchable at once
        deadline = time.monotonic() + 15
        while v.get(note.id).enrichment != "done" and time.monotonic() < deadline:
            time.sleep(0.1)
        done = v.get(note.id)
    assert done.enrichment == "done"
    assert done.context == "A pet the user adopted." and done.tags == ("pets",)


def test_due_follows_the_tenant_timezone() -> None:
    paris = ZoneInfo("Europe/Paris")
    before = datetime(2026, 6, 1, 2, 29, tzinfo=paris).timestamp()
    after = datetime(2026, 6, 1, 2, 31, tzinfo=paris).timestamp()
    assert due(before, paris, "02:30", None) is None
    assert due(after, paris, "02:30", None) == datetime(2026, 6, 1).date()
    assert due(after, paris, "02:30", datetime(2026, 6, 1).date()) is None  # once a day
    utc_same_instant = due(after, ZoneInfo("UTC"), "02:30", None)  # 00:31 UTC: not yet
    assert utc_same_instant is None


def test_the_scheduler_consolidates_each_tenant_once_a_day(
    make_services: ServicesFactory,
) -> None:
    services = make_services("sqlite", amem=True)
    services.tenants.create("t1")
    amem = install(services, worker=False, scheduler=False)
    services.vault.parts.hooks = None  # store near-duplicates without same-day merge
    v = services.vault.scoped(A)
    v.add("The user's sister works in finance in Northvale")
    v.add("The user's sister works in finance, in Northvale")
    services.vault.parts.hooks = amem
    clock = [datetime(2026, 6, 1, 1, 0, tzinfo=ZoneInfo("UTC")).timestamp()]
    scheduler = ConsolidationScheduler(services, amem, clock=lambda: clock[0])
    scheduler.start()
    try:
        assert scheduler.tick() == 0  # 01:00: not yet
        clock[0] += 2 * 3600  # 03:00
        assert scheduler.tick() == 1 and v.list_notes()[1] == 2  # related, none removed
        assert [n.relations for n in v.list_notes()[0] if n.relations] == [
            {"duplicate_of": (v.list_notes()[0][1].id,)},
            {"duplicates": (v.list_notes()[0][0].id,)},
        ]
        assert scheduler.tick() == 0  # once a day
    finally:
        scheduler.stop()


def test_cli_consolidate_and_quality_scan(tmp_path: Path) -> None:
    data = tmp_path / "data"
    services = open_services(Settings(data_dir=data, amem=False), screen=None)
    services.tenants.create("t1")
    v = services.vault.scoped(A)
    v.add("The user's sister works in finance in Northvale")
    v.add("The user's sister works in finance, in Northvale")
    v.add("Call mom")  # too short for the quality scan (8 characters)
    services.close()
    env = clean_env(MEMVAULT_DATA_DIR=str(data))
    run = [sys.executable, "-m", "memvault.cli"]
    out = subprocess.run(
        [*run, "consolidate"], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "1 groups, 1 relations written" in out.stdout
    review = tmp_path / "review"
    out = subprocess.run(
        [*run, "quality-scan", "--review", str(review)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "t1/u1/a1: 1 flagged" in out.stdout
    files = list(review.iterdir())
    assert len(files) == 1 and "#too_short" in files[0].read_text()
    assert "Northvale" not in out.stdout + out.stderr  # counts only, never text
