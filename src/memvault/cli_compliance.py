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

from memvault.compliance.verify import Verdict, verify_audit_export, verify_receipt

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


@audit_app.command("verify")
def audit_verify(
    file: Annotated[Path, typer.Argument(help="An export of GET /v1/admin/audit/export (JSONL).")],
    keys: KeysOption = None,
    public_key: PublicKeyOption = None,
    previous_hash: Annotated[
        str | None,
        typer.Option(
            "--previous-hash",
            help="For a since_seq export: the head hash of the export it continues.",
        ),
    ] = None,
) -> None:
    """Check seq continuity, every hash, every prev link and the head's signature."""
    lines = _read(file).splitlines()
    key_id = ""
    if lines:
        try:
            head = json.loads(lines[-1])
            key_id = str(head.get("key_id", "")) if isinstance(head, dict) else ""
        except ValueError:
            key_id = ""
    _finish(
        verify_audit_export(
            lines, _public_keys(keys, public_key, key_id), previous_hash=previous_hash
        )
    )


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
