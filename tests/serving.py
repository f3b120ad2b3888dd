"""Helpers for tests that run a real `memvault serve` subprocess on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any MEMVAULT_ setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env["MEMVAULT_AMEM"] = "off"  # plain notes unless a test asks for A-MEM (it merges)
    env.update(extra)
    return env


def start_serve(data: Path, port: int, env: dict[str, str], *, capture: bool = False) -> Any:
    """Start `memvault serve` in its own process group (so `stop` reaches its children)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memvault.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data),
        ],
        env=env,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if capture else subprocess.DEVNULL,
        text=capture,
        start_new_session=True,
    )


def call_json(method: str, url: str, key: str, body: Any = None) -> tuple[int, Any]:
    """One authenticated JSON request to a served memvault: its status and its decoded body
    (an error's too; None when the body is empty, the text when it is not JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    if not raw:
        return status, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_healthy(base: str, proc: subprocess.Popen, timeout: float = 180) -> None:  # type: ignore[type-arg]
    """Wait until the server answers `/healthz` (it reconciles before it does)."""
    deadline = time.monotonic() + timeout
    while not healthy(base):
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"memvault serve exited: {out}")
        if time.monotonic() > deadline:
            pytest.fail(f"memvault serve did not answer /healthz within {timeout:.0f} s")
        time.sleep(0.3)


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:  # type: ignore[type-arg]
    """Signal the server's process group and wait for it (SIGKILL after 30 s)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
