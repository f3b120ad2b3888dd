"""`memvault audit verify` and `memvault receipt verify`: offline checks for auditors.

Both read a file and the deployment's public keys (`--keys`: the JSON of `GET /v1/receipt-keys`,
or `--public-key`: one base64 Ed25519 key), need no server and no data directory, and exit 0 with
`OK: …` or 1 with a one-line reason.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from memvault.compliance.verify import (
    Previous,
    Verdict,
    read_head,
    verify_audit_export,
    verify_receipt,
)

audit_app = typer.Typer(help="Audit log exports (offline).")
receipt_app = typer.Typer(help="Erasure receipts (offline).")

KeysOption = Annotated[
    Path | None,
    typer.Option(
        "--keys",
        help="The JSON of GET /v1/receipt-keys ({'keys': [...]}) saved to a file.",
        dir_okay=False,
    ),
]
PublicKeyOption = Annotated[
    str | None,
    typer.Option("--public-key", help="One Ed25519 public key: base64 of its 32 raw bytes."),
]


def register(app: typer.Typer) -> None:
    """Add the `audit` and `receipt` command groups to the main CLI."""
    app.add_typer(audit_app, name="audit")
    app.add_typer(receipt_app, name="receipt")


def _fail(reason: str) -> typer.Exit:
    typer.echo("FAILED: " + " ".join(reason.split()), err=True)
    return typer.Exit(1)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"cannot read {path.name} ({type(exc).__name__})") from None


def _public_keys(keys: Path | None, public_key: str | None, key_id: str) -> list[dict[str, Any]]:
    """The key list to verify with: from `--keys`, or `--public-key` standing for `key_id`."""
    if (keys is None) == (public_key is None):
        raise _fail("give exactly one of --keys FILE or --public-key B64")
    if public_key is not None:
        try:
            raw = base64.b64decode(public_key.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise _fail("--public-key is not base64") from None
        if len(raw) != 32:
            raise _fail("--public-key must decode to 32 bytes (a raw Ed25519 key)")
        return [{"key_id": key_id, "alg": "Ed25519", "public_key": public_key.strip()}]
    assert keys is not None
    try:
        data = json.loads(_read(keys))
    except ValueError:
        raise _fail(f"{keys.name} is not JSON") from None
    listed = data.get("keys") if isinstance(data, dict) else data
    if not isinstance(listed, list) or not all(isinstance(k, dict) for k in listed):
        raise _fail(f'{keys.name} is not {{"keys": [...]}} as GET /v1/receipt-keys returns')
    return listed


def _finish(verdict: Verdict) -> None:
    if not verdict.ok:
        raise _fail(verdict.reason)
    typer.echo(verdict.reason)


def _key_ids(*files: list[str]) -> list[str]:
    """The key ids named by the head and checkpoint lines of export files (for --public-key)."""
    found: list[str] = []
    for lines in files:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("type") in ("head", "checkpoint"):
                key_id = str(record.get("key_id", ""))
                if key_id not in found:
                    found.append(key_id)
    return found or [""]


@audit_app.command("verify")
def audit_verify(
    file: Annotated[Path, typer.Argument(help="An export of GET /v1/admin/audit/export (JSONL).")],
    keys: KeysOption = None,
    public_key: PublicKeyOption = None,
    previous_hash: Annotated[
        str | None,
        typer.Option(
            "--previous-hash",
            help="For a partial (since_seq) export: the head hash of the export it continues.",
        ),
    ] = None,
    previous: Annotated[
        Path | None,
        typer.Option(
            "--previous",
            help="For a partial export: the export it continues (or that export's head line).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Check where the export starts, seq continuity, every hash and prev link, every signed
    checkpoint it carries, and the head's signature. A full export must start at seq 1; a
    partial one must be given the head it continues (`--previous` or `--previous-hash`)."""
    if previous is not None and previous_hash is not None:
        raise _fail("give at most one of --previous FILE and --previous-hash HEX")
    lines = _read(file).splitlines()
    before = _read(previous).splitlines() if previous is not None else []
    listed: list[dict[str, Any]] = []
    for key_id in _key_ids(lines, before) if public_key is not None else [""]:
        listed += _public_keys(keys, public_key, key_id)  # --public-key stands for each key id
    anchor: Previous | None = None
    if previous is not None:
        found = read_head(before, listed)
        if isinstance(found, Verdict):
            raise _fail(found.reason)
        anchor = found
    _finish(verify_audit_export(lines, listed, previous_hash=previous_hash, previous=anchor))


@receipt_app.command("verify")
def receipt_verify(
    file: Annotated[Path, typer.Argument(help='A receipt: {"receipt": {...}, "key_id", ...}.')],
    keys: KeysOption = None,
    public_key: PublicKeyOption = None,
) -> None:
    """Check the receipt's signature, and that `verified` is true only if nothing remains."""
    try:
        document = json.loads(_read(file))
    except ValueError:
        raise _fail(f"{file.name} is not JSON") from None
    key_id = str(document.get("key_id", "")) if isinstance(document, dict) else ""
    _finish(verify_receipt(document, _public_keys(keys, public_key, key_id)))
