"""Canonical JSON, the deployment's Ed25519 signing key, signed documents and receipt verify."""

from __future__ import annotations

import base64
import copy
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from memvault import canonical as shared_canonical
from memvault.canonical import NotCanonical, canonical_json, rfc3339
from memvault.cli import app
from memvault.compliance.signatures import sign_document, sign_with_key_id, verify_document
from memvault.errors import KeyNotFound
from memvault.keyring import Keyring, SigningKeys
from memvault.keyring._master import LocalMasterKey
from memvault.keyring._signing import signing_keys as signing_table


@pytest.fixture
def keyring(tmp_path: Path) -> Any:
    ring = Keyring.open(f"sqlite:///{tmp_path / 'keys.db'}", LocalMasterKey(os.urandom(32)))
    yield ring
    ring.close()


# --- canonical JSON ------------------------------------------------------------------------------


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_non_ascii() -> None:
    obj = {"b": 1, "a": {"z": [True, None, "x"], "y": "été 北京"}, "A": -3}
    out = canonical_json(obj)
    assert out == '{"A":-3,"a":{"y":"été 北京","z":[true,null,"x"]},"b":1}'.encode()
    assert b" " not in out.replace("été 北京".encode(), b"")
    assert "北京".encode() in out  # UTF-8, not \\u escapes


def test_canonical_json_refuses_floats_wherever_they_hide() -> None:
    for bad in (1.5, {"a": 2.0}, {"a": [1, {"b": 0.1}]}):
        with pytest.raises(NotCanonical, match="float"):
            canonical_json(bad)
    with pytest.raises(NotCanonical, match="keys must be strings"):
        canonical_json({1: "a"})
    with pytest.raises(NotCanonical):
        canonical_json({"a": b"bytes"})


def test_rfc3339_is_utc_with_z_and_milliseconds() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00.000Z"
    assert rfc3339(1_700_000_000.25) == "2023-11-14T22:13:20.250Z"


def test_the_vault_the_keyring_and_compliance_share_one_canonical_rule() -> None:
    from memvault.audit import log as audit
    from memvault.compliance import signatures, verify

    assert signatures.canonical_json is shared_canonical.canonical_json
    assert audit.event_hash is verify.event_hash is shared_canonical.event_hash
    assert audit.GENESIS is verify.GENESIS is shared_canonical.GENESIS


# --- the signing key -----------------------------------------------------------------------------


def test_signing_key_is_created_lazily_and_listed_in_the_design_format(keyring: Keyring) -> None:
    keys = keyring.signing_keys()
    assert isinstance(keys, SigningKeys)
    with keyring._store.engine.connect() as conn:
        assert conn.execute(select(signing_table)).first() is None  # nothing before first use
    key_id, signature = keys.sign(b"hello")
    listed = keys.public_keys()
    assert [k["key_id"] for k in listed] == [key_id]
    assert set(listed[0]) == {"key_id", "alg", "public_key", "created_at"}
    assert listed[0]["alg"] == "Ed25519" and listed[0]["created_at"].endswith("Z")
    assert len(base64.b64decode(listed[0]["public_key"])) == 32
    assert len(base64.b64decode(signature)) == 64
    assert keyring.signing_keys() is keys


def test_rotation_keeps_old_keys_listed_and_their_signatures_valid(keyring: Keyring) -> None:
    keys = keyring.signing_keys()
    old_id, old_sig = sign_document(keys, {"a": 1})
    new_id = keys.rotate()
    assert new_id != old_id
    listed = keys.public_keys()
    assert [k["key_id"] for k in listed] == [old_id, new_id]
    assert verify_document({"a": 1}, old_id, old_sig, listed)
    assert sign_document(keys, {"a": 1})[0] == new_id


def test_the_private_key_never_leaves(keyring: Keyring, tmp_path: Path) -> None:
    keys = keyring.signing_keys()
    keys.sign(b"x")
    for obj in (keys, keys._current):
        with pytest.raises(TypeError):
            pickle.dumps(obj)
        with pytest.raises(TypeError):
            copy.deepcopy(obj)
        assert "secret" in repr(obj) or repr(obj) == "SigningKeys(alg='Ed25519')"
    with keyring._store.engine.connect() as conn:
        row = conn.execute(select(signing_table)).one()
    assert len(row.wrapped_private_key) > 32  # wrapped (nonce | ciphertext | tag), not raw


def test_a_wrapped_key_moved_to_another_id_or_opened_by_another_master_fails(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    master = LocalMasterKey(os.urandom(32))
    with Keyring.open(url, master) as ring:
        keys = ring.signing_keys()
        first = keys.current_key_id()
        second = keys.rotate()
        engine = ring._store.engine
        with engine.begin() as conn:
            wrapped = conn.execute(
                select(signing_table.c.wrapped_private_key).where(signing_table.c.key_id == first)
            ).scalar_one()
            conn.execute(
                update(signing_table)
                .where(signing_table.c.key_id == second)
                .values(wrapped_private_key=wrapped)
            )
    with Keyring.open(url, master) as ring, pytest.raises(KeyNotFound, match="did not unwrap"):
        ring.signing_keys().sign(b"x")
    other = LocalMasterKey(os.urandom(32))
    with Keyring.open(url, other) as ring, pytest.raises(KeyNotFound, match="master"):
        ring.signing_keys().sign(b"x")


def test_sign_with_key_id_covers_the_key_id(keyring: Keyring) -> None:
    keys = keyring.signing_keys()
    head = sign_with_key_id(keys, {"type": "head", "seq": 2})
    body = {k: v for k, v in head.items() if k != "signature"}
    assert verify_document(body, head["key_id"], head["signature"], keys.public_keys())
    assert not verify_document(
        {**body, "key_id": "other"}, head["key_id"], head["signature"], keys.public_keys()
    )


def test_verify_document_is_false_for_unknown_keys_and_garbage(keyring: Keyring) -> None:
    keys = keyring.signing_keys()
    key_id, sig = sign_document(keys, {"a": 1})
    listed = keys.public_keys()
    assert verify_document({"a": 1}, key_id, sig, listed)
    assert not verify_document({"a": 2}, key_id, sig, listed)
    assert not verify_document({"a": 1}, "nope", sig, listed)
    assert not verify_document({"a": 1}, key_id, "not base64!", listed)
    assert not verify_document({"a": 1.0}, key_id, sig, listed)
    assert not verify_document({"a": 1}, key_id, sig, [])


# --- receipts ------------------------------------------------------------------------------------


def _receipt(keys: SigningKeys, remaining: int = 0, verified: bool = True) -> dict[str, Any]:
    receipt = {
        "id": "0190a0c4-7b1d-7c3e-8f00-1234abcd5678",
        "tenant_id": "acme",
        "subject": {"user_id": "alice", "agent_id": None},
        "requested_by": "0123456789abcdef",
        "requested_at": rfc3339(1_700_000_000),
        "completed_at": rfc3339(1_700_000_005),
        "keys_destroyed": 2,
        "stores": [
            {"store": "sql.notes", "deleted": 5, "remaining": remaining},
            {"store": "vectors", "deleted": 5, "remaining": 0},
        ],
        "verified": verified,
    }
    key_id, signature = sign_document(keys, receipt)
    return {"receipt": receipt, "key_id": key_id, "signature": signature}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return path


def test_receipt_verify_passes_then_fails_after_any_byte_flip(
    keyring: Keyring, tmp_path: Path
) -> None:
    keys = keyring.signing_keys()
    document = _receipt(keys)
    keys_file = _write(tmp_path / "keys.json", {"keys": keys.public_keys()})
    good = _write(tmp_path / "receipt.json", document)
    result = _run("receipt", "verify", str(good), "--keys", str(keys_file))
    assert result.exit_code == 0, result.output
    assert "OK" in result.output
    public = keys.public_keys()[0]["public_key"]
    assert _run("receipt", "verify", str(good), "--public-key", public).exit_code == 0

    raw = good.read_bytes()
    flipped = 0
    for position in range(0, len(raw), 7):  # every 7th byte: content, keys, signature
        changed = bytearray(raw)
        changed[position] ^= 0x01
        bad = tmp_path / "bad.json"
        bad.write_bytes(bytes(changed))
        result = _run("receipt", "verify", str(bad), "--keys", str(keys_file))
        assert result.exit_code == 1, (position, chr(raw[position]))
        assert len(result.output.strip().splitlines()) == 1
        flipped += 1
    assert flipped > 50


def test_receipt_verify_checks_verified_against_remaining(keyring: Keyring, tmp_path: Path) -> None:
    keys = keyring.signing_keys()
    keys_file = _write(tmp_path / "keys.json", {"keys": keys.public_keys()})
    lying = _write(tmp_path / "lying.json", _receipt(keys, remaining=1, verified=True))
    result = _run("receipt", "verify", str(lying), "--keys", str(keys_file))
    assert result.exit_code == 1 and "remaining" in result.output
    honest = _write(tmp_path / "honest.json", _receipt(keys, remaining=1, verified=False))
    result = _run("receipt", "verify", str(honest), "--keys", str(keys_file))
    assert result.exit_code == 0 and "NOT verified" in result.output


def test_receipt_verify_needs_exactly_one_key_source(keyring: Keyring, tmp_path: Path) -> None:
    good = _write(tmp_path / "receipt.json", _receipt(keyring.signing_keys()))
    result = _run("receipt", "verify", str(good))
    assert result.exit_code == 1 and "--keys" in result.output
    other = base64.b64encode(os.urandom(32)).decode()
    assert _run("receipt", "verify", str(good), "--public-key", other).exit_code == 1
