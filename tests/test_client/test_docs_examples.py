"""docs/sdk.md's examples run, in order, as one script against the live server (A-MEM on)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.client import Client
from tests.test_client.conftest import OPERATOR_KEY, Tenant

SDK_DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def test_sdk_doc_examples_run(
    amem_tenant: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = amem_tenant  # as deployed by default: A-MEM on
    blocks = python_blocks(SDK_DOC.read_text())
    assert len(blocks) >= 10
    monkeypatch.setenv("MEMVAULT_URL", tenant.base_url)
    monkeypatch.setenv("MEMVAULT_API_KEY", tenant.agent_key)
    monkeypatch.setenv("MEMVAULT_ADMIN_KEY", tenant.admin_key)
    monkeypatch.setenv("MEMVAULT_OPERATOR_KEY", OPERATOR_KEY)
    monkeypatch.setenv("EXAMPLES_DIR", str(tmp_path))
    namespace: dict[str, object] = {"__name__": "sdk_doc_examples"}
    for number, block in enumerate(blocks, start=1):
        try:
            exec(compile(block, f"docs/sdk.md block {number}", "exec"), namespace)
        except Exception as exc:  # name the block that failed
            raise AssertionError(f"docs/sdk.md python block {number} failed: {exc!r}") from exc

    # The receipt the erase example saved verifies offline with the CLI, as the doc says.
    with Client(tenant.base_url) as anyone:
        keys = {"keys": anyone.receipt_keys()}
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    receipt, keys_file = str(tmp_path / "receipt.json"), str(tmp_path / "keys.json")
    result = CliRunner().invoke(app, ["receipt", "verify", receipt, "--keys", keys_file])
    assert result.exit_code == 0 and "OK" in result.output, result.output
