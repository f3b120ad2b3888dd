"""`memvault receipt verify` takes a receipt in every shape the service hands one out (issue 33):
the answer of `POST /v1/admin/erase` (with the job's `id` and `state`), the bare signed receipt,
and the SDK's `job.document`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from memvault.cli import app
from memvault.client.models import Erasure
from tests.apiclient import Api
from tests.conftest import ServicesFactory


def _verify(tmp_path: Path, name: str, document: Any, keys: Path) -> Any:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return CliRunner().invoke(app, ["receipt", "verify", str(path), "--keys", str(keys)])


def test_receipt_verify_takes_the_api_answer_the_bare_receipt_and_the_sdk_document(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    api = Api(make_services("sqlite"))
    admin = api.tenant("t1")
    api.add(api.agent_key("t1", "usrerased", "a1"), "usrerased keeps the canoe in the barn")
    answer = api.call("POST", "/v1/admin/erase", admin, json={"user_id": "usrerased"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert {"id", "state"} <= set(body)
    keys = tmp_path / "keys.json"
    keys.write_text(api.call("GET", "/v1/receipt-keys", None).text, encoding="utf-8")

    bare = {k: body[k] for k in ("receipt", "key_id", "signature")}
    polled = api.call("GET", f"/v1/admin/erasures/{body['id']}", admin).json()
    shapes = {
        "api.json": body,
        "polled.json": polled,
        "bare.json": bare,
        "sdk.json": Erasure.from_body(body).document,
    }
    for name, document in shapes.items():
        result = _verify(tmp_path, name, document, keys)
        assert result.exit_code == 0, (name, result.output)
        assert "OK: signature verifies" in result.output

    # The wrapper is not signed, but it cannot smuggle anything: other keys, another job's id
    # or a state other than done are refused.
    for name, document in {
        "extra.json": {**body, "note": "x"},
        "other-id.json": {**body, "id": "another-job"},
        "running.json": {**body, "state": "running"},
    }.items():
        result = _verify(tmp_path, name, document, keys)
        assert result.exit_code == 1, (name, result.output)
        assert len(result.output.strip().splitlines()) == 1
