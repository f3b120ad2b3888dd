"""No key material escapes: repr/str, pickling, copying, and DEBUG logs over a full lifecycle."""

from __future__ import annotations

import base64
import copy
import logging
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from memvault.keyring import FileMasterKey, Keyring, _primitives, associated_data
from memvault.keyring._primitives import AeadKey, HmacKey
from memvault.scope import Scope
from memvault.testing import FakeKms, NullAead, NullKeyring


def _renderings(secret: bytes) -> list[str]:
    return [
        secret.hex(),
        secret.hex().upper(),
        base64.b64encode(secret).decode(),
        base64.urlsafe_b64encode(secret).decode(),
        repr(secret)[2:-1],
        secret[:12].hex(),  # a prefix is still a leak
        base64.b64encode(secret[:12]).decode(),
    ]


@pytest.fixture
def recorded_keys(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Record every key the keyring generates (the real os.urandom still provides them)."""
    generated: list[bytes] = []
    original: Callable[[int], bytes] = _primitives._key_source

    def recording(n: int) -> bytes:
        material = original(n)
        generated.append(material)
        return material

    monkeypatch.setattr(_primitives, "_key_source", recording)
    return generated


def _handles(tmp_path: Path) -> tuple[Keyring, list[object]]:
    keyring = Keyring.open(f"sqlite:///{tmp_path / 'ks.db'}", FileMasterKey(tmp_path / "m.key"))
    scope = Scope("tenant-a", "user-1", "agent-1")
    aead = keyring.aead_for(scope)
    objects: list[object] = [
        keyring,
        aead,
        keyring.index_key("tenant-a"),
        keyring._master,
        keyring._tenant_keys["tenant-a"],
        keyring._keysets[scope],
        AeadKey(b"k" * 32),
        HmacKey(b"k" * 32),
        FakeKms(),
        NullAead(scope, 1),
        NullKeyring(keyring),
    ]
    return keyring, objects


def test_handles_repr_and_str_show_no_key_material(
    tmp_path: Path, recorded_keys: list[bytes]
) -> None:
    keyring, objects = _handles(tmp_path)
    try:
        master = (tmp_path / "m.key").read_bytes()
        secrets = [*recorded_keys, master, b"k" * 32]
        assert len(recorded_keys) == 5  # master file, tenant, data, index keys, FakeKms
        for obj in objects:
            text = repr(obj) + str(obj)
            for secret in secrets:
                for rendering in _renderings(secret):
                    assert rendering not in text, type(obj).__name__
    finally:
        keyring.close()


def test_handles_pickle_and_copy_raise_type_error(tmp_path: Path) -> None:
    keyring, objects = _handles(tmp_path)
    try:
        for obj in objects:
            with pytest.raises(TypeError):
                pickle.dumps(obj)
            with pytest.raises(TypeError):
                copy.copy(obj)
            with pytest.raises(TypeError):
                copy.deepcopy(obj)
    finally:
        keyring.close()


def test_debug_logging_full_lifecycle_shows_no_key_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, recorded_keys: list[bytes]
) -> None:
    caplog.set_level(logging.DEBUG)  # root and every library logger, SQLAlchemy's included
    logging.getLogger("sqlalchemy").setLevel(logging.DEBUG)
    url = f"sqlite:///{tmp_path / 'ks.db'}"
    old_master = FileMasterKey(tmp_path / "old.key")
    new_master = FileMasterKey(tmp_path / "new.key")
    scope = Scope("tenant-a", "user-1", "agent-1")
    with Keyring.open(url, old_master) as keyring:
        aead = keyring.aead_for(scope)
        ad = associated_data(scope, "n1", "text", aead.key_version)
        envelope = aead.encrypt(b"a private memory", ad)
        keyring.index_key("tenant-a").token_id("tea")
        keyring.rotate_scope(scope)
        keyring.aead_for(Scope("tenant-b", "user-1", "agent-1"))
        keyring.rotate_master(new_master)
        keyring.aead_for(scope).decrypt(envelope, ad)
        keyring.shred("tenant-a", "user-1")
        keyring.shred("tenant-b")
    logging.getLogger("sqlalchemy").setLevel(logging.NOTSET)

    assert any(r.name == "memvault.keyring" for r in caplog.records)
    assert any(r.name.startswith("sqlalchemy") for r in caplog.records)
    log_text = caplog.text + "".join(repr(r.args) for r in caplog.records)
    secrets = [
        (tmp_path / "old.key").read_bytes(),
        (tmp_path / "new.key").read_bytes(),
        *recorded_keys,
    ]
    assert len(secrets) >= 7
    for secret in secrets:
        for rendering in _renderings(secret):
            assert rendering not in log_text
    assert "a private memory" not in log_text
