"""Helpers for scale-path tests: a keystore database of its own, services on it, a carve."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_DATA = Path("/var/lib/postgresql/15/main")


def autocommit_engine(url: str):  # type: ignore[no-untyped-def]
    return create_engine(url, isolation_level="AUTOCOMMIT")


@contextmanager
def scratch_database(admin_url: str, prefix: str = "mvks") -> Iterator[str]:
    """A fresh database (for a keystore or a restore), dropped afterwards; its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    engine = autocommit_engine(admin_url)
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


def database_files(admin_url: str, url: str) -> list[Path]:
    """The heap/index files of `url`'s database and the cluster's WAL segments."""
    name = make_url(url).database
    engine = autocommit_engine(admin_url)
    with engine.connect() as conn:
        conn.execute(text("CHECKPOINT"))  # dirty pages reach the files
        oid = conn.execute(text("SELECT oid FROM pg_database WHERE datname = :n"), {"n": name})
        folder = PG_DATA / "base" / str(oid.scalar_one())
    engine.dispose()
    files = [p for p in folder.iterdir() if p.is_file()]
    return files + [p for p in (PG_DATA / "pg_wal").iterdir() if p.is_file()]


def carve(files: list[Path], needles: list[bytes]) -> int:
    """How many of `needles` appear in any of `files` (a raw byte scan)."""
    found = set()
    for path in files:
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # a WAL segment removed meanwhile
            continue
        found.update(i for i, needle in enumerate(needles) if needle in data)
    return len(found)


def wrapped_keys(keystore_url: str, user: str) -> list[bytes]:
    """The wrapped data keys the keystore holds for `user`."""
    engine = create_engine(keystore_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT wrapped_key FROM keyring_data_keys WHERE user_id = :u"), {"u": user}
        ).scalars()
        keys = [bytes(k) for k in rows]
    engine.dispose()
    return keys
