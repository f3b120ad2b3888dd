"""One process per data directory (a lock), private files, and secrets kept out of reprs."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.errors import VaultError
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.store.datadir import LOCK_FILE, DataDirInUse, DataDirLock
from tests.conftest import ServicesFactory

ALICE = Scope("t1", "u1", "a1")


def _services_with_a_note(make_services: ServicesFactory, root: Path, text: str) -> Services:
    """Embedded services on the data directory `root`, holding one note of ALICE."""
    services = make_services("sqlite", data_dir=root)
    services.vault.scoped(ALICE).add(text)
    return services


HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memvault.store.datadir import DataDirLock
    lock = DataDirLock.acquire(Path(sys.argv[1]))
    print("locked", flush=True)
    sys.stdin.readline()
    lock.release()
    print("released", flush=True)
    sys.stdin.readline()
    """
)


def _holder(data_dir: Path) -> subprocess.Popen[str]:
    """Another process holding the lock on `data_dir` until told to let go."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_refuses_another_process_and_names_no_path(tmp_path: Path) -> None:
    data = tmp_path / "private-place"
    holder = _holder(data)
    try:
        with pytest.raises(DataDirInUse) as caught:
            DataDirLock.acquire(data)
        message = caught.value.message
        assert f"another memvault process (pid {holder.pid})" in message
        assert "stop that process first" in message
        assert "private-place" not in message and "/" not in message.replace(" / ", "")
        assert caught.value.code == "data_dir_in_use"
        assert isinstance(caught.value, VaultError)
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
    lock = DataDirLock.acquire(data)  # free again once released
    lock.release()
    holder.stdin.write("\n")
    holder.stdin.flush()
    holder.wait(timeout=30)


def test_lock_of_a_killed_process_is_released_by_the_kernel(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)

    lock = DataDirLock.acquire(tmp_path)  # no stale lock after kill -9

    assert lock.held
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    assert stat.S_IMODE((tmp_path / LOCK_FILE).stat().st_mode) == 0o600
    lock.release()
    assert not lock.held
    lock.release()  # idempotent


def test_lock_twice_in_one_process_is_refused_then_free_after_release(tmp_path: Path) -> None:
    first = DataDirLock.acquire(tmp_path)
    with pytest.raises(DataDirInUse, match="already open in this process"):
        DataDirLock.acquire(tmp_path)
    first.release()
    DataDirLock.acquire(tmp_path).release()


def test_services_twice_on_one_data_dir_fail_clearly_and_reopen_after_close(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    first = _services_with_a_note(make_services, root, "Alice likes green tea in the morning")

    with pytest.raises(DataDirInUse, match="already open in this process"):
        make_services("sqlite", data_dir=root)

    first.close()
    again = make_services("sqlite", data_dir=root)
    assert again.vault.scoped(ALICE).list_notes()[1] == 1
    again.close()


def test_services_failing_to_open_release_the_lock(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    key = root / "master.key"
    key.write_bytes(b"short")
    key.chmod(0o600)

    with pytest.raises(VaultError, match="32 bytes"):
        open_services(Settings(data_dir=root), embedder=embedder, screen=None)

    key.unlink()
    services = open_services(Settings(data_dir=root), embedder=embedder, screen=None)
    services.close()


def test_stores_outside_the_data_dir_take_no_lock(tmp_path: Path, embedder: Embedder) -> None:
    """Database, keystore and index configured elsewhere: workers may share a DATA_DIR."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings = Settings(
        data_dir=tmp_path / "shared",
        database_url=f"sqlite:///{elsewhere / 'data.db'}",
        keystore_url=f"sqlite:///{elsewhere / 'keys.db'}",
        qdrant_url=":memory:",
    )
    a = open_services(settings, embedder=embedder, screen=None)
    b = open_services(settings, embedder=embedder, screen=None)
    assert a.data_dir_lock is None and b.data_dir_lock is None
    a.close()
    b.close()

    embedded_index = settings.model_copy(update={"qdrant_url": None})
    first = open_services(embedded_index, embedder=embedder, screen=None)
    assert first.data_dir_lock is not None and first.data_dir_lock.held
    with pytest.raises(DataDirInUse):
        open_services(embedded_index, embedder=embedder, screen=None)
    first.close()
    assert not first.data_dir_lock.held


# -- files on disk ------------------------------------------------------------------------------


def test_embedded_files_are_private_after_a_write(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    services = _services_with_a_note(make_services, root, "Alice takes her coffee with oat milk")

    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(root) == 0o700
    for name in (
        "memvault.db",
        "memvault.db-wal",
        "memvault.db-shm",
        "keystore.db",
        "keystore.db-wal",
        "keystore.db-shm",
        "master.key",
        LOCK_FILE,
    ):
        assert (root / name).exists(), name
        assert mode(root / name) == 0o600, name
    index = root / "index"
    assert mode(index) == 0o700
    shards = [p for p in index.iterdir() if p.is_dir()]
    assert shards and all(mode(p) == 0o700 for p in shards)
    assert all(mode(p / "namespace.json") == 0o600 for p in shards)
    services.close()


def test_existing_loose_sqlite_files_are_tightened(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    services = _services_with_a_note(make_services, root, "Bob walks his dog before breakfast")
    services.close()
    for name in ("memvault.db", "memvault.db-wal", "memvault.db-shm"):
        if (root / name).exists():
            (root / name).chmod(0o644)
    root.chmod(0o755)

    again = make_services("sqlite", data_dir=root)

    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for name in ("memvault.db", "memvault.db-wal", "memvault.db-shm"):
        if (root / name).exists():
            assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
    again.close()


# -- secrets in memory --------------------------------------------------------------------------


def test_settings_repr_and_str_hide_the_operator_key_and_url_passwords() -> None:
    settings = Settings(
        operator_key="mvop_sekrit-operator-key",  # type: ignore[arg-type]
        database_url="postgresql+psycopg://app:hunter2pw@db.example/memvault",
        keystore_url="postgresql+psycopg://keys:s3cr3tpw@keys.example/ks",
    )
    assert isinstance(settings.operator_key, SecretStr)
    assert settings.operator_key.get_secret_value() == "mvop_sekrit-operator-key"
    assert settings.resolved_database_url().endswith("app:hunter2pw@db.example/memvault")
    for text in (repr(settings), str(settings)):
        assert "sekrit" not in text
        assert "hunter2pw" not in text and "s3cr3tpw" not in text
        assert "app:***@db.example" in text


def test_operator_key_from_the_environment_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_OPERATOR_KEY", "mvop_from-env-value")
    settings = Settings()
    assert settings.operator_key is not None
    assert settings.operator_key.get_secret_value() == "mvop_from-env-value"
    assert "from-env-value" not in repr(settings)


def test_services_repr_prints_nothing_secret(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    services = make_services("sqlite", data_dir=tmp_path / "vault")
    services.settings = services.settings.model_copy(
        update={"operator_key": SecretStr("mvop_never-printed")}
    )
    text = repr(services)
    assert text == "Services(database=sqlite, index=EdgeIndex, closed=False)"
    assert "never-printed" not in str(services)
