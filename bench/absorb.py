"""What absorbing a note costs, and the share of it that moves the absorbed note's own aliases.

One user holds `--notes` notes (A-MEM off, so nothing is absorbed behind the bench's back). Then
`--absorbs` times, on notes 3i, 3i+1 and 3i+2: note 3i+2 is absorbed into 3i+1, then 3i+1 into
3i (so each timed absorb has one alias to move, as when a survivor is absorbed in its turn). Each
`ScopedVault.absorb` is timed end to end, and so is the partition scroll that finds the aliases
(`PointFilter(alias_of=)`), the part the alias move adds.

Run: .venv/bin/python -m bench.absorb [--notes 5000] [--absorbs 100]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.hardening import sentence
from memvault.config import Settings
from memvault.scope import Scope
from memvault.vault.drafts import NoteDraft
from memvault.vault.embed import make_embedder
from memvault.vault.factory import open_services
from memvault.vault.index.base import PointFilter

BATCH = 100


def run(notes: int, absorbs: int, root: Path) -> dict[str, float]:
    model = make_embedder("use-m3", data_dir=root)
    services = open_services(Settings(data_dir=root / "data", amem=False), embedder=model)
    try:
        services.tenants.create("bench")
        view = services.vault.scoped(Scope("bench", "alice", "planner"))
        ids: list[str] = []
        for start in range(0, notes, BATCH):
            drafts = [NoteDraft(text=sentence(i)) for i in range(start, min(notes, start + BATCH))]
            ids.extend(n.id for n in view.add_many(drafts))
            print(f"  stored {len(ids)}/{notes} notes", flush=True)
        user, _ = view.index_tags()
        absorb_ms: list[float] = []
        scroll_ms: list[float] = []
        for i in range(absorbs):
            earlier, middle, survivor = ids[3 * i + 2], ids[3 * i + 1], ids[3 * i]
            view.absorb(earlier, middle)  # `middle` now has one alias to hand on
            began = time.perf_counter()
            services.index.scroll_ids(view.namespace, PointFilter(user_id=user, alias_of=middle))
            scroll_ms.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            view.absorb(middle, survivor)
            absorb_ms.append((time.perf_counter() - began) * 1000)
        return {
            "notes": notes,
            "absorbs": absorbs,
            "absorb_p50_ms": round(statistics.median(absorb_ms), 2),
            "alias_scroll_p50_ms": round(statistics.median(scroll_ms), 3),
        }
    finally:
        services.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--absorbs", type=int, default=100)
    a = parser.parse_args(argv)
    if a.notes < 3 * a.absorbs:
        parser.error("--notes must be at least 3 x --absorbs")
    with tempfile.TemporaryDirectory() as tmp:
        result = run(a.notes, a.absorbs, Path(tmp))
    for key, value in result.items():
        print(f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
