"""NullAead / NullKeyring: the benchmark's no-encryption baseline keeps the real interface."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.embed import Embedder
from memvault.errors import DecryptionError
from memvault.keyring import Keyring, ScopeAead, associated_data
from memvault.scope import Scope
from memvault.testing import FakeKms, NullAead, NullKeyring


def test_null_keyring_aead_round_trip_without_encryption(tmp_path: Path) -> None:
    scope = Scope("tenant-a", "user-1", "agent-1")
    with NullKeyring.open(f"sqlite:///{tmp_path / 'ks.db'}", FakeKms()) as keyring:
        aead = keyring.aead_for(scope)
        assert isinstance(aead, NullAead) and isinstance(aead, ScopeAead)
        ad = associated_data(scope, "n1", "text", aead.key_version)
        envelope = aead.encrypt(b"plain text", ad)
        assert envelope.endswith(b"plain text")
        assert aead.decrypt(envelope, ad) == b"plain text"
        # Keys are still managed by the real keyring underneath.
        assert keyring.count_keys("tenant-a") == 1
        assert keyring.index_key("tenant-a").token_id("tea") >= 0
        assert keyring.rotate_scope(scope) == 2
        assert keyring.aead_for(scope).key_version == 2
        assert keyring.shred("tenant-a") == 4
        assert not keyring.has_tenant("tenant-a")


def test_null_envelope_refused_by_real_aead(tmp_path: Path) -> None:
    scope = Scope("tenant-a", "user-1", "agent-1")
    with Keyring.open(f"sqlite:///{tmp_path / 'ks.db'}", FakeKms()) as real:
        envelope = NullAead(scope, 1).encrypt(b"x" * 40, b"")
        with pytest.raises(DecryptionError):
            real.aead_for(scope).decrypt(envelope, b"")
        with pytest.raises(DecryptionError):
            NullAead(scope, 1).decrypt(real.aead_for(scope).encrypt(b"x", b""), b"")


def test_null_keyring_defines_every_public_keyring_method() -> None:
    """A method left to `Keyring` itself would run without the wrapper's state (an
    AttributeError at run time, as `check_erasable` did for `open_services`)."""
    import inspect

    for name in dir(Keyring):
        static = inspect.getattr_static(Keyring, name)
        if name.startswith("_") or not callable(static):
            continue
        assert name in vars(NullKeyring), name


def test_open_services_runs_on_a_null_keyring(tmp_path: Path, embedder: Embedder) -> None:
    from memvault.config import Settings
    from memvault.keyring import FileMasterKey
    from memvault.runtime.factory import open_services

    settings = Settings(data_dir=tmp_path)
    keyring = NullKeyring.open(
        settings.resolved_keystore_url(), FileMasterKey(settings.resolved_master_key_file())
    )
    services = open_services(settings, embedder=embedder, keyring=keyring)
    try:
        scoped = services.vault.scoped(Scope("tenant-a", "user-1", "agent-1"))
        note = scoped.add("the null keyring stores this without encryption")
        assert scoped.get(note.id).text.startswith("the null keyring")
    finally:
        services.close()
