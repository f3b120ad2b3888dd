"""The CLI and the two commands: `make serve` then curl add + search."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from tests.serving import free_port, stop

REPO = Path(__file__).resolve().parents[2]


def test_create_tenant_then_issue_key(tmp_path: Path) -> None:
    runner = CliRunner()
    created = runner.invoke(app, ["operator", "create-tenant", "acme", "--data-dir", str(tmp_path)])
    assert created.exit_code == 0, created.output
    assert "mvk_acme." in created.output
    issued = runner.invoke(
        app,
        [
            "keys",
            "issue",
            "--tenant",
            "acme",
            "--user",
            "alice",
            "--agent",
            "planner",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert issued.exit_code == 0, issued.output
    assert issued.output.strip().startswith("mvk_acme.")
    again = runner.invoke(app, ["operator", "create-tenant", "acme", "--data-dir", str(tmp_path)])
    assert again.exit_code != 0
    unknown = runner.invoke(
        app,
        [
            "keys",
            "issue",
            "--tenant",
            "nope",
            "--user",
            "u",
            "--agent",
            "a",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert unknown.exit_code != 0


def test_demo_walks_through_isolation_and_erase(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "credential_refused" in out
    assert "acme/coder sees only the shared note" in out
    assert "verified=True" in out
    # The erase revokes alice's keys (issue 7); a key that still works lists nothing.
    assert (
        "acme/planner's key was revoked with alice's data (401)" in out
        or "acme/planner now lists 0 memories" in out
    )
    assert "globex/planner still lists 1 memories" in out
    assert "Zq8vT2mW9xLp" not in out


def _curl(method: str, url: str, key: str, body: dict | None = None) -> dict:
    cmd = ["curl", "-sS", "-X", method, url, "-H", f"Authorization: Bearer {key}"]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    return dict(json.loads(out))


@pytest.mark.slow
def test_make_serve_then_curl_add_and_search(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    proc = subprocess.Popen(
        ["make", "-s", "serve", f"PORT={port}", f"DATA_DIR={data}"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            probe = subprocess.run(["curl", "-sf", f"{base}/healthz"], capture_output=True)
            if probe.returncode == 0:
                break
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.5)
        else:
            pytest.fail("memvault serve did not answer /healthz within 180 s")
        operator_key = (data / "operator.key").read_text().strip()
        assert (data / "operator.key").stat().st_mode & 0o777 == 0o600
        admin = _curl("POST", f"{base}/v1/operator/tenants", operator_key, {"tenant_id": "acme"})
        agent = _curl(
            "POST",
            f"{base}/v1/admin/keys",
            admin["api_key"],
            {"user_id": "alice", "agent_id": "planner"},
        )
        added = _curl(
            "POST",
            f"{base}/v1/memories",
            agent["api_key"],
            {"text": "Alice takes her coffee with oat milk"},
        )
        found = _curl(
            "POST",
            f"{base}/v1/memories/search",
            agent["api_key"],
            {"query": "how does alice take her coffee?"},
        )
        assert found["results"][0]["id"] == added["id"]
        assert found["results"][0]["text"] == "Alice takes her coffee with oat milk"
    finally:
        stop(proc)
