"""Keyring on a real keystore (SQLite file, and PostgreSQL when configured): creation, shredding,
rotation, index keys, persistence and concurrency."""

from __future__ import annotations

import threading

import pytest

from memvault.errors import DecryptionError, InvalidRequest, KeyNotFound, VaultError
from memvault.keyring import Keyring, associated_data
from memvault.scope import Scope
from memvault.testing import FakeKms
from tests._helpers import run_threads

NOTE = "note-1"


def _seal(keyring: Keyring, scope: Scope, text: bytes = b"likes green tea") -> tuple[bytes, bytes]:
    aead = keyring.aead_for(scope)
    ad = associated_data(scope, NOTE, "text", aead.key_version)
    return aead.encrypt(text, ad), ad


def test_aead_for_first_use_creates_tenant_and_one_data_key(keyring: Keyring, scope: Scope) -> None:
    assert not keyring.has_tenant(scope.tenant)
    assert keyring.count_keys(scope.tenant) == 0
    aead = keyring.aead_for(scope)
    assert aead.key_version == 1
    assert keyring.has_tenant(scope.tenant)
    assert keyring.count_keys(scope.tenant, scope.user, scope.agent) == 1
    assert keyring.aead_for(scope) is aead
    assert keyring.count_keys(scope.tenant) == 1


def test_aead_for_create_false_on_unknown_scope_creates_nothing(
    keyring: Keyring, scope: Scope
) -> None:
    aead = keyring.aead_for(scope, create=False)
    with pytest.raises(DecryptionError):
        aead.decrypt(b"\x01" + b"\x00\x00\x00\x01" + bytes(40), b"")
    with pytest.raises(KeyNotFound):
        aead.encrypt(b"x", b"")
    assert not keyring.has_tenant(scope.tenant)
    assert keyring.count_keys(scope.tenant) == 0


def test_keyring_reopened_with_same_master_decrypts(
    keystore_url: str, kms: FakeKms, scope: Scope
) -> None:
    with Keyring.open(keystore_url, kms) as first:
        envelope, ad = _seal(first, scope)
    with Keyring.open(keystore_url, kms) as second:
        assert second.aead_for(scope, create=False).decrypt(envelope, ad) == b"likes green tea"
        assert second.count_keys(scope.tenant) == 1


def test_keyring_open_with_other_master_raises_key_not_found(
    keystore_url: str, kms: FakeKms, scope: Scope
) -> None:
    with Keyring.open(keystore_url, kms) as first:
        _seal(first, scope)
    with pytest.raises(KeyNotFound):
        Keyring.open(keystore_url, FakeKms())


def test_shred_user_destroys_keys_and_prior_handles(keyring: Keyring, scope: Scope) -> None:
    other_agent = Scope(scope.tenant, scope.user, "agent-2")
    other_user = Scope(scope.tenant, "user-2", scope.agent)
    envelope, ad = _seal(keyring, scope)
    other_envelope, other_ad = _seal(keyring, other_agent)
    kept_envelope, kept_ad = _seal(keyring, other_user)
    handle_before = keyring.aead_for(scope)

    assert keyring.shred(scope.tenant, scope.user) == 2

    assert keyring.count_keys(scope.tenant, scope.user) == 0
    with pytest.raises(DecryptionError):
        handle_before.decrypt(envelope, ad)
    with pytest.raises(KeyNotFound):
        handle_before.encrypt(b"new", ad)
    with pytest.raises(DecryptionError):
        keyring.aead_for(scope, create=False).decrypt(envelope, ad)
    with pytest.raises(DecryptionError):
        keyring.aead_for(other_agent, create=False).decrypt(other_envelope, other_ad)
    # Other users of the tenant are untouched, and the tenant key survives.
    assert keyring.aead_for(other_user).decrypt(kept_envelope, kept_ad) == b"likes green tea"
    assert keyring.has_tenant(scope.tenant)


def test_shred_then_aead_for_creates_new_key_that_cannot_read_old(
    keyring: Keyring, scope: Scope
) -> None:
    envelope, ad = _seal(keyring, scope)
    keyring.shred(scope.tenant, scope.user, scope.agent)
    fresh = keyring.aead_for(scope)
    assert keyring.count_keys(scope.tenant, scope.user, scope.agent) == 1
    with pytest.raises(DecryptionError):
        fresh.decrypt(envelope, ad)
    new_envelope = fresh.encrypt(b"after erase", ad)
    assert fresh.decrypt(new_envelope, ad) == b"after erase"


def test_shred_agent_only_leaves_sibling_agent(keyring: Keyring, scope: Scope) -> None:
    sibling = Scope(scope.tenant, scope.user, "shared")
    _seal(keyring, scope)
    sibling_envelope, sibling_ad = _seal(keyring, sibling)
    assert keyring.shred(scope.tenant, scope.user, scope.agent) == 1
    assert keyring.count_keys(scope.tenant, scope.user, scope.agent) == 0
    assert keyring.count_keys(scope.tenant, scope.user) == 1
    assert keyring.aead_for(sibling).decrypt(sibling_envelope, sibling_ad) == b"likes green tea"


def test_shred_tenant_destroys_all_keys_of_tenant_only(keyring: Keyring, scope: Scope) -> None:
    other_tenant = Scope("tenant-b", scope.user, scope.agent)
    envelope, ad = _seal(keyring, scope)
    _seal(keyring, Scope(scope.tenant, "user-2", "agent-9"))
    kept_envelope, kept_ad = _seal(keyring, other_tenant)
    index_before = keyring.index_key(scope.tenant)
    handle_before = keyring.aead_for(scope)

    # two data keys + the tenant key + the index key
    assert keyring.shred(scope.tenant) == 4

    assert keyring.count_keys(scope.tenant) == 0
    assert not keyring.has_tenant(scope.tenant)
    with pytest.raises(DecryptionError):
        handle_before.decrypt(envelope, ad)
    with pytest.raises(KeyNotFound):
        index_before.token_id("tea")
    with pytest.raises(DecryptionError):
        keyring.aead_for(scope).decrypt(envelope, ad)
    assert keyring.aead_for(other_tenant).decrypt(kept_envelope, kept_ad) == b"likes green tea"


def test_shred_survives_reopen(keystore_url: str, kms: FakeKms, scope: Scope) -> None:
    with Keyring.open(keystore_url, kms) as first:
        envelope, ad = _seal(first, scope)
        first.shred(scope.tenant, scope.user)
    with Keyring.open(keystore_url, kms) as second:
        assert second.count_keys(scope.tenant) == 0
        with pytest.raises(DecryptionError):
            second.aead_for(scope, create=False).decrypt(envelope, ad)


def test_shred_agent_without_user_raises_invalid_request(keyring: Keyring) -> None:
    with pytest.raises(InvalidRequest):
        keyring.shred("tenant-a", agent="agent-1")


def test_rotate_scope_new_version_encrypts_old_still_decrypts(
    keyring: Keyring, scope: Scope
) -> None:
    old_envelope, old_ad = _seal(keyring, scope, b"v1 text")
    old_handle = keyring.aead_for(scope)

    assert keyring.rotate_scope(scope) == 2

    new_handle = keyring.aead_for(scope)
    assert new_handle.key_version == 2
    assert new_handle is not old_handle
    new_ad = associated_data(scope, NOTE, "text", 2)
    new_envelope = new_handle.encrypt(b"v2 text", new_ad)
    assert new_envelope[1:5] == (2).to_bytes(4, "big")
    assert new_handle.decrypt(old_envelope, old_ad) == b"v1 text"
    assert old_handle.decrypt(new_envelope, new_ad) == b"v2 text"
    assert keyring.count_keys(scope.tenant, scope.user, scope.agent) == 2


def test_rotate_scope_versions_decrypt_after_reopen(
    keystore_url: str, kms: FakeKms, scope: Scope
) -> None:
    with Keyring.open(keystore_url, kms) as first:
        v1_envelope, v1_ad = _seal(first, scope, b"one")
        first.rotate_scope(scope)
        v2_envelope, v2_ad = _seal(first, scope, b"two")
    with Keyring.open(keystore_url, kms) as second:
        aead = second.aead_for(scope, create=False)
        assert aead.key_version == 2
        assert aead.decrypt(v1_envelope, v1_ad) == b"one"
        assert aead.decrypt(v2_envelope, v2_ad) == b"two"


def test_rotate_scope_in_other_process_is_fetched_on_decrypt(
    keystore_url: str, kms: FakeKms, scope: Scope
) -> None:
    with Keyring.open(keystore_url, kms) as reader, Keyring.open(keystore_url, kms) as writer:
        _seal(writer, scope)
        stale = reader.aead_for(scope)
        writer.rotate_scope(scope)
        envelope, ad = _seal(writer, scope, b"rotated elsewhere")
        assert stale.decrypt(envelope, ad) == b"rotated elsewhere"


def test_rotate_master_new_master_opens_old_master_does_not(
    keystore_url: str, kms: FakeKms, scope: Scope
) -> None:
    other = Scope("tenant-b", "user-1", "agent-1")
    new_master = FakeKms()
    with Keyring.open(keystore_url, kms) as first:
        envelope, ad = _seal(first, scope)
        other_envelope, other_ad = _seal(first, other)
        tag_before = first.index_key(scope.tenant).tag("tea")
        assert first.rotate_master(new_master) == 2
        assert first.master_key_id == new_master.key_id
        # The running keyring keeps working, and new tenants are wrapped by the new master.
        assert first.aead_for(scope).decrypt(envelope, ad) == b"likes green tea"
        _seal(first, Scope("tenant-c", "user-1", "agent-1"))
    with Keyring.open(keystore_url, new_master) as second:
        assert second.aead_for(scope, create=False).decrypt(envelope, ad) == b"likes green tea"
        assert second.aead_for(other, create=False).decrypt(other_envelope, other_ad)
        assert second.index_key(scope.tenant).tag("tea") == tag_before
    with pytest.raises(KeyNotFound):
        Keyring.open(keystore_url, kms)


def test_rotate_master_failure_leaves_keystore_unchanged(
    keystore_url: str, kms: FakeKms, scope: Scope
) -> None:
    broken = FakeKms()
    broken.disable()
    with Keyring.open(keystore_url, kms) as first:
        envelope, ad = _seal(first, scope)
        with pytest.raises(DecryptionError):
            first.rotate_master(broken)
        assert first.master_key_id == kms.key_id
    with Keyring.open(keystore_url, kms) as second:
        assert second.aead_for(scope, create=False).decrypt(envelope, ad) == b"likes green tea"


def test_index_key_deterministic_within_tenant_distinct_across(
    keystore_url: str, kms: FakeKms
) -> None:
    with Keyring.open(keystore_url, kms) as first:
        a = first.index_key("tenant-a")
        token, tag = a.token_id("tea"), a.tag("tea")
        assert 0 <= token < 2**32
        assert len(tag) == 32 and int(tag, 16) >= 0
        assert a.token_id("tea") == token
        assert a.token_id("coffee") != token
        b = first.index_key("tenant-b")
        assert b.token_id("tea") != token
        assert b.tag("tea") != tag
    with Keyring.open(keystore_url, kms) as second:
        assert second.index_key("tenant-a").token_id("tea") == token
        assert second.index_key("tenant-a").tag("tea") == tag


def test_index_key_after_tenant_shred_is_new(keyring: Keyring) -> None:
    before = keyring.index_key("tenant-a").tag("tea")
    keyring.shred("tenant-a")
    assert keyring.index_key("tenant-a").tag("tea") != before


def test_aead_for_concurrent_threads_share_one_data_key(keyring: Keyring, scope: Scope) -> None:
    handles = []
    barrier = threading.Barrier(8)

    def work(_: int) -> None:
        barrier.wait()
        handle = keyring.aead_for(scope)
        ad = associated_data(scope, NOTE, "text", handle.key_version)
        for _ in range(50):
            assert handle.decrypt(handle.encrypt(b"x", ad), ad) == b"x"
        handles.append(handle)

    assert not run_threads(work, 8)
    assert len({id(h) for h in handles}) == 1
    assert keyring.count_keys(scope.tenant) == 1


def test_keyring_closed_refuses_use(keystore_url: str, kms: FakeKms, scope: Scope) -> None:
    kr = Keyring.open(keystore_url, kms)
    envelope, ad = _seal(kr, scope)
    handle = kr.aead_for(scope)
    kr.close()
    with pytest.raises(DecryptionError):
        handle.decrypt(envelope, ad)
    with pytest.raises(VaultError):
        kr.aead_for(Scope("tenant-z", "u", "a"))
