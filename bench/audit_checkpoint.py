"""The cost of one signed audit checkpoint: `.venv/bin/python -m bench.audit_checkpoint [N]`.

A checkpoint re-reads and re-hashes the N events since the tenant's last checkpoint, signs the
head with Ed25519 and inserts one row into the keystore. Real parts: a SQLite data store and a
SQLite keystore (synchronous=FULL) in a temporary folder. Prints p50 and max over `--rounds`
(20) rounds, and the signature plus keystore insert alone.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from bench._harness import arg_parser
from memvault.audit.checkpoints import Checkpointer
from memvault.audit.log import AuditLog
from memvault.keyring import Keyring
from memvault.keyring._master import LocalMasterKey
from memvault.store.database import Database


def main(events: int = 1000, rounds: int = 20) -> None:
    """Measure `rounds` checkpoints of `events` events each, then 50 bare signatures."""
    root = Path(tempfile.mkdtemp())
    db = Database(f"sqlite:///{root / 'data.db'}")
    db.migrate()
    ring = Keyring.open(f"sqlite:///{root / 'keys.db'}", LocalMasterKey(os.urandom(32)))
    audit = AuditLog(db, time.time, ring)
    checkpointer = Checkpointer(audit, ring.audit_checkpoints, time.time, every=10**6, seconds=3600)
    audit.record("t", "system", "bench.warm", count=0)
    checkpointer.checkpoint("t")
    full: list[float] = []
    for _ in range(rounds):
        for i in range(events):
            audit.record("t", "system", "bench.event", count=i)
        start = time.perf_counter()
        checkpointer.checkpoint("t")
        full.append(time.perf_counter() - start)
    store = ring.audit_checkpoints()
    bare: list[float] = []
    for i in range(50):
        start = time.perf_counter()
        store.sign("u", i + 1, "ab" * 32, "2026-01-01T00:00:00.000Z")
        bare.append(time.perf_counter() - start)
    print(
        f"N={events}: checkpoint (re-hash {events} events, sign, keystore insert) "
        f"p50 {statistics.median(full) * 1000:.1f} ms, max {max(full) * 1000:.1f} ms; "
        f"sign + keystore insert alone p50 {statistics.median(bare) * 1000:.2f} ms"
    )
    ring.close()
    db.dispose()


def cli(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("events", nargs="?", type=int, default=1000, help="N (default 1000)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    main(args.events, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
