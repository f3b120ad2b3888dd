"""The signed audit export over the API, and `memvault audit verify` run on it offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from memvault.cli import app
from tests.apiclient import Api


def export_lines(api: Api, key: str, since: int | None = None) -> list[str]:
    """The audit export (NDJSON) as lines, from `since` on when given."""
    path = "/v1/admin/audit/export" + ("" if since is None else f"?since_seq={since}")
    r = api.call("GET", path, key)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return r.text.splitlines()


def verify_export(tmp_path: Path, api: Api, lines: list[str], *extra: str) -> Any:
    """Run `memvault audit verify` on `lines` with the server's public receipt keys."""
    keys = api.client.get("/v1/receipt-keys")
    assert keys.status_code == 200
    (tmp_path / "keys.json").write_text(keys.text)
    (tmp_path / "export.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = [
        "audit",
        "verify",
        str(tmp_path / "export.jsonl"),
        "--keys",
        str(tmp_path / "keys.json"),
    ]
    return CliRunner().invoke(app, [*args, *extra])
