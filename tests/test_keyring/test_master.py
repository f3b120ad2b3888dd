"""Master key providers: file (0600, atomic, refuses loose modes), env var, FakeKms."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from memvault.errors import DecryptionError, VaultError
from memvault.keyring import EnvMasterKey, FileMasterKey, Keyring, MasterKeyProvider
from memvault.scope import Scope
from memvault.testing import FakeKms


def test_file_master_key_first_use_creates_32_bytes_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "secrets" / "master.key"
    master = FileMasterKey(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_bytes()) == 32
    assert [p.name for p in path.parent.iterdir()] == ["master.key"]  # no temp file left
    assert isinstance(master, MasterKeyProvider)


def test_file_master_key_created_0600_even_with_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        FileMasterKey(tmp_path / "master.key")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "master.key").stat().st_mode) == 0o600


def test_file_master_key_reopened_same_key_id_and_unwraps(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    first = FileMasterKey(path)
    wrapped = first.wrap(b"k" * 32, b"aad")
    second = FileMasterKey(path)
    assert second.key_id == first.key_id
    assert len(second.key_id) == 8
    assert second.unwrap(wrapped, b"aad") == b"k" * 32


def test_file_master_key_distinct_files_distinct_ids(tmp_path: Path) -> None:
    assert FileMasterKey(tmp_path / "a.key").key_id != FileMasterKey(tmp_path / "b.key").key_id


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_file_master_key_group_or_world_access_raises_vault_error(
    tmp_path: Path, mode: int
) -> None:
    path = tmp_path / "master.key"
    FileMasterKey(path)
    path.chmod(mode)
    with pytest.raises(VaultError, match="chmod 600"):
        FileMasterKey(path)


@pytest.mark.parametrize("size", [0, 16, 31, 33, 64])
def test_file_master_key_wrong_size_raises_vault_error(tmp_path: Path, size: int) -> None:
    path = tmp_path / "master.key"
    path.write_bytes(b"\x07" * size)
    path.chmod(0o600)
    with pytest.raises(VaultError, match="32 bytes"):
        FileMasterKey(path)


def test_file_master_key_directory_path_raises_vault_error(tmp_path: Path) -> None:
    (tmp_path / "dir.key").mkdir(mode=0o700)
    with pytest.raises(VaultError):
        FileMasterKey(tmp_path / "dir.key")


def _bad_key_files(tmp_path: Path) -> list[Path]:
    loose = tmp_path / "loose" / "master.key"
    FileMasterKey(loose)
    loose.chmod(0o644)
    short = tmp_path / "short" / "master.key"
    short.parent.mkdir()
    short.write_bytes(b"x" * 5)
    short.chmod(0o600)
    directory = tmp_path / "dir" / "master.key"
    directory.mkdir(parents=True)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    return [loose, short, directory, not_a_dir / "master.key"]


def test_file_master_key_errors_name_the_setting_never_the_path(tmp_path: Path) -> None:
    for path in _bad_key_files(tmp_path):
        with pytest.raises(VaultError) as caught:
            FileMasterKey(path)
        message = caught.value.message
        assert str(tmp_path) not in message, message
        assert "MEMVAULT_MASTER_KEY_FILE" in message


def test_env_master_key_reads_base64(monkeypatch: pytest.MonkeyPatch) -> None:
    material = os.urandom(32)
    monkeypatch.setenv("MEMVAULT_MASTER_KEY", base64.b64encode(material).decode())
    master = EnvMasterKey()
    again = EnvMasterKey()
    assert master.key_id == again.key_id
    assert again.unwrap(master.wrap(b"t" * 32, b"ad"), b"ad") == b"t" * 32


def test_env_master_key_missing_raises_vault_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_MASTER", raising=False)
    with pytest.raises(VaultError, match="MY_MASTER is not set"):
        EnvMasterKey("MY_MASTER")


@pytest.mark.parametrize(
    "value",
    ["not base64!!", base64.b64encode(b"short").decode(), base64.b64encode(b"x" * 48).decode()],
)
def test_env_master_key_malformed_raises_vault_error_without_echo(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MY_MASTER", value)
    with pytest.raises(VaultError) as caught:
        EnvMasterKey("MY_MASTER")
    assert value not in str(caught.value)


def test_master_unwrap_wrong_aad_raises_decryption_error(tmp_path: Path) -> None:
    master = FileMasterKey(tmp_path / "master.key")
    wrapped = master.wrap(b"k" * 32, b"tenant-a")
    with pytest.raises(DecryptionError):
        master.unwrap(wrapped, b"tenant-b")


def test_fake_kms_disabled_refuses_unwrap_and_keyring_reports_key_not_found(
    tmp_path: Path,
) -> None:
    kms = FakeKms()
    url = f"sqlite:///{tmp_path / 'ks.db'}"
    with Keyring.open(url, kms) as keyring:
        keyring.aead_for(Scope("tenant-a", "u", "a"))
        assert kms.wrap_calls == 1 and kms.unwrap_calls == 1
    kms.disable()
    with Keyring.open(url, kms) as keyring, pytest.raises(VaultError):
        keyring.aead_for(Scope("tenant-a", "u", "a"))


def test_keyring_with_file_master_rotates_to_env_master(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'ks.db'}"
    scope = Scope("tenant-a", "u", "a")
    old_master = FileMasterKey(tmp_path / "master.key")
    monkeypatch.setenv("MEMVAULT_MASTER_KEY", base64.b64encode(os.urandom(32)).decode())
    new_master = EnvMasterKey()
    with Keyring.open(url, old_master) as keyring:
        aead = keyring.aead_for(scope)
        envelope = aead.encrypt(b"x", b"ad")
        assert keyring.rotate_master(new_master) == 1
    with Keyring.open(url, EnvMasterKey()) as keyring:
        assert keyring.aead_for(scope, create=False).decrypt(envelope, b"ad") == b"x"
    with pytest.raises(VaultError):
        Keyring.open(url, FileMasterKey(tmp_path / "master.key"))
