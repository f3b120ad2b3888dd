"""Logs during real requests: one JSON object per line, a request id on each, never text or keys."""

from __future__ import annotations

import io
import json
import logging
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from memvault.api.app import create_app
from memvault.observability import JsonFormatter, RequestIdFilter, TextFormatter
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory
from tests.serving import clean_env, free_port, stop, wait_healthy

NOTE = "The user keeps a spare umbrella under the office desk"
SECRET = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Every record logged while the test runs, formatted as JSON lines."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def _lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_request_log_lines_are_json_with_the_request_id_and_no_text(
    make_services: ServicesFactory, captured: io.StringIO
) -> None:
    services = make_services("sqlite")
    app = create_app(services, operator_key=OPERATOR_KEY)

    @app.get("/log-inside", include_in_schema=False)
    def log_inside() -> dict[str, str]:
        logging.getLogger("memvault.test").warning("logged from the endpoint's worker thread")
        return {}

    @app.post("/boom", include_in_schema=False)
    def boom(body: dict[str, str]) -> None:
        raise RuntimeError(body["text"])  # the exception's message holds request text

    api = Api(services)
    api.client = TestClient(app)
    admin = api.tenant("acme")
    key = api.agent_key("acme", "alice", "planner")
    api.add(key, NOTE)
    api.search(key, "where is the umbrella?")
    refused = api.call("POST", "/v1/memories", key, json={"text": f"use key {SECRET}"})
    assert refused.status_code == 422
    inside = api.client.get("/log-inside", headers={"X-Request-ID": "req-inside-1"})
    assert inside.headers["x-request-id"] == "req-inside-1"
    crashed = api.client.post("/boom", json={"text": NOTE})
    assert crashed.status_code == 500

    lines = _lines(captured)
    raw = captured.getvalue()
    for needle in (NOTE, "umbrella", SECRET, key, admin, OPERATOR_KEY):
        assert needle not in raw, needle
    by_logger: dict[str, list[dict[str, object]]] = {}
    for line in lines:
        assert {"ts", "level", "logger", "message", "request_id"} <= set(line)
        by_logger.setdefault(str(line["logger"]), []).append(line)
    (endpoint_line,) = by_logger["memvault.test"]
    assert endpoint_line["request_id"] == "req-inside-1"
    access = by_logger["memvault.access"]
    assert {(a["route"], a["status"]) for a in access} >= {
        ("/v1/memories", 201),
        ("/v1/memories/search", 200),
        ("/v1/memories", 422),
        ("/log-inside", 200),
        ("/boom", 500),
    }
    assert all(a["request_id"] != "-" for a in access)
    boom_id = crashed.headers["x-request-id"]
    errors = [line for line in by_logger["memvault.api"] if line["level"] == "error"]
    assert errors and all(e["request_id"] == boom_id for e in errors)


def test_text_format_carries_the_request_id_and_hides_exception_messages() -> None:
    formatter = TextFormatter()
    try:
        raise ValueError(NOTE)
    except ValueError:
        record = logging.LogRecord("memvault.x", logging.ERROR, __file__, 1, "failed", (), None)
        record.exc_info = sys.exc_info()
    line = formatter.format(record)
    assert "[-] failed" in line and "ValueError at" in line and NOTE not in line
    as_json = json.loads(JsonFormatter().format(record))
    assert as_json["exception"].startswith("ValueError at") and NOTE not in json.dumps(as_json)


def test_serve_with_log_format_json_logs_json_lines_without_text_or_keys(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    operator_key = "mvop_log-test-operator-key-abcdefghij"
    stderr_path = tmp_path / "stderr.log"
    stdout_path = tmp_path / "stdout.log"
    argv = [sys.executable, "-m", "memvault.cli", "serve", "--port", str(port)]
    argv += ["--data-dir", str(tmp_path / "data"), "--log-format", "json"]
    with stderr_path.open("w") as stderr, stdout_path.open("w") as stdout:
        proc = subprocess.Popen(
            argv,
            env=clean_env(MEMVAULT_OPERATOR_KEY=operator_key),
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    ids: dict[str, str] = {}
    try:
        wait_healthy(base, proc)
        with httpx.Client(base_url=base, timeout=60) as http:

            def call(name: str, method: str, path: str, key: str, body: object) -> httpx.Response:
                r = http.request(
                    method, path, json=body, headers={"Authorization": f"Bearer {key}"}
                )
                ids[name] = r.headers["x-request-id"]
                return r

            admin = call("tenant", "POST", "/v1/operator/tenants", operator_key, {"tenant_id": "t"})
            admin_key = admin.json()["api_key"]
            issued = call(
                "key",
                "POST",
                "/v1/admin/keys",
                admin_key,
                {"user_id": "u", "agent_id": "a", "role": "agent"},
            )
            key = issued.json()["api_key"]
            assert call("add", "POST", "/v1/memories", key, {"text": NOTE}).status_code == 201
            found = call("search", "POST", "/v1/memories/search", key, {"query": "umbrella"})
            assert found.status_code == 200
            refused = call("refuse", "POST", "/v1/memories", key, {"text": f"key {SECRET}"})
            assert refused.status_code == 422
    finally:
        stop(proc, signal.SIGTERM)
    assert stdout_path.read_text() == ""  # start-up lines are JSON log records on stderr too
    raw = stderr_path.read_text()
    for needle in (NOTE, "umbrella", SECRET, operator_key, admin_key, key):
        assert needle not in raw
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert any(line["logger"].startswith("uvicorn") for line in lines)  # uvicorn's lines too
    assert any(line["logger"] == "memvault.serve" for line in lines)
    access = {line["request_id"]: line for line in lines if line["logger"] == "memvault.access"}
    for name, rid in ids.items():
        assert rid in access, name
    assert access[ids["search"]]["route"] == "/v1/memories/search"
    assert access[ids["refuse"]]["status"] == 422
