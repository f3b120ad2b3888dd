"""A real `memvault serve` holds its data directory: a second process exits at once, in one line.

Also, against the same server: the README quickstart runs twice in a row without a traceback, and
every file under the data directory is private (files 0600, directories 0700) after a write.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serving import call_json, clean_env, free_port, start_serve, stop, wait_healthy

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@dataclass
class Served:
    proc: subprocess.Popen[str]
    port: int
    data: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _env() -> dict[str, str]:
    return clean_env()


def _memvault(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memvault.cli", *argv],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("served") / "private-data"
    port = free_port()
    proc = start_serve(data, port, _env(), capture=True)
    server = Served(proc, port, data)
    try:
        wait_healthy(server.base, proc)
        yield server
    finally:
        stop(proc)


def test_second_process_on_a_served_data_dir_exits_at_once(served: Served) -> None:
    data = str(served.data)
    commands = [
        ["serve", "--port", str(free_port()), "--data-dir", data],
        ["reconcile", "--data-dir", data],
        ["operator", "create-tenant", "acme", "--data-dir", data],
        ["keys", "issue", "--tenant", "acme", "--user", "u", "--agent", "a", "--data-dir", data],
    ]
    for argv in commands:
        started = time.monotonic()
        result = _memvault(*argv)
        elapsed = time.monotonic() - started

        assert result.returncode == 1, (argv, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr + result.stdout
        lines = result.stderr.strip().splitlines()
        assert lines == [
            f"error: the data directory is in use by another memvault process "
            f"(pid {served.proc.pid}): stop that process first, or use another --data-dir / "
            "MEMVAULT_DATA_DIR"
        ], (argv, result.stderr)
        assert data not in result.stderr
        assert elapsed < 20, f"{argv[0]} took {elapsed:.1f} s to refuse"  # nothing heavy loaded

    # The first server is unharmed: it still answers and writes.
    operator_key = (served.data / "operator.key").read_text().strip()
    status, admin = call_json(
        "POST", f"{served.base}/v1/operator/tenants", operator_key, {"tenant_id": "lock-check"}
    )
    assert status == 201, admin


def _quickstart(served: Served) -> str:
    """The README's quickstart block, pointed at this server and its data directory."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quickstart with curl", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    script = block.group(1)
    assert "localhost:8700" in script and ".memvault/operator.key" in script
    script = script.replace("localhost:8700", f"127.0.0.1:{served.port}")
    return script.replace(".memvault/operator.key", str(served.data / "operator.key"))


def test_readme_quickstart_runs_twice_without_a_traceback(served: Served) -> None:
    script = _quickstart(served)
    for run in range(2):
        result = subprocess.run(
            ["sh", "-c", script], env=_env(), capture_output=True, text=True, timeout=300
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert "Traceback" not in output and "error:" not in output, (run, output)
        assert "Alice takes her coffee with oat milk" in result.stdout, (run, output)
        assert '"verified":true' in result.stdout.replace(" ", ""), (run, output)
        time.sleep(1.1)  # the tenant id carries the second it was made


def test_files_under_the_served_data_dir_are_private(served: Served) -> None:
    operator_key = (served.data / "operator.key").read_text().strip()
    status, admin = call_json(
        "POST", f"{served.base}/v1/operator/tenants", operator_key, {"tenant_id": "modes"}
    )
    assert status == 201, admin
    status, agent = call_json(
        "POST",
        f"{served.base}/v1/admin/keys",
        admin["api_key"],
        {"user_id": "alice", "agent_id": "planner"},
    )
    assert status == 201, agent
    status, note = call_json(
        "POST",
        f"{served.base}/v1/memories",
        agent["api_key"],
        {"text": "Alice keeps her spare keys with the neighbour"},
    )
    assert status == 201, note

    loose = []
    names = set()
    for folder, dirs, files in os.walk(served.data):
        for name in dirs:
            path = Path(folder) / name
            if stat.S_IMODE(path.stat().st_mode) != 0o700:
                loose.append(
                    f"{path.relative_to(served.data)} {stat.S_IMODE(path.stat().st_mode):o}"
                )
        for name in files:
            path = Path(folder) / name
            names.add(name)
            if stat.S_IMODE(path.lstat().st_mode) & 0o077:
                loose.append(
                    f"{path.relative_to(served.data)} {stat.S_IMODE(path.stat().st_mode):o}"
                )
    assert stat.S_IMODE(served.data.stat().st_mode) == 0o700
    assert loose == []
    for expected in (
        "memvault.db",
        "memvault.db-wal",
        "keystore.db",
        "keystore.db-wal",
        "master.key",
        "operator.key",
        "memvault.lock",
        "namespace.json",
    ):
        assert expected in names, expected
