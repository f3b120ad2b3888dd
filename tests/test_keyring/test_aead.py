"""ScopeAead and associated_data: round trips, tampering, AAD binding, known-answer vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.errors import DecryptionError, InvalidRequest
from memvault.keyring import FORMAT_VERSION, Keyring, ScopeAead, _primitives, associated_data
from memvault.scope import Scope
from memvault.testing import FakeKms

SCOPE = Scope("tenant-a", "user-1", "agent-1")
NOTE_ID = "0193a1b2-1234-7abc-8def-0123456789ab"


@pytest.fixture(scope="module")
def module_keyring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyring]:
    path: Path = tmp_path_factory.mktemp("aead") / "keystore.db"
    kr = Keyring.open(f"sqlite:///{path}", FakeKms())
    yield kr
    kr.close()


@pytest.fixture(scope="module")
def aead(module_keyring: Keyring) -> ScopeAead:
    return module_keyring.aead_for(SCOPE)


@settings(max_examples=200, deadline=None)
@given(plaintext=st.binary(max_size=4096), ad=st.binary(max_size=512))
def test_aead_round_trip_any_bytes_returns_plaintext(
    aead: ScopeAead, plaintext: bytes, ad: bytes
) -> None:
    envelope = aead.encrypt(plaintext, ad)
    assert aead.decrypt(envelope, ad) == plaintext
    assert len(plaintext) < 16 or plaintext not in envelope


def test_aead_same_plaintext_twice_gives_different_envelopes(aead: ScopeAead) -> None:
    ad = associated_data(SCOPE, NOTE_ID, "text", aead.key_version)
    assert aead.encrypt(b"same", ad) != aead.encrypt(b"same", ad)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), plaintext=st.binary(max_size=300))
def test_aead_any_flipped_byte_raises_decryption_error(
    aead: ScopeAead, data: st.DataObject, plaintext: bytes
) -> None:
    ad = associated_data(SCOPE, NOTE_ID, "text", aead.key_version)
    envelope = bytearray(aead.encrypt(plaintext, ad))
    position = data.draw(st.integers(0, len(envelope) - 1), label="position")
    bit = data.draw(st.integers(0, 7), label="bit")
    envelope[position] ^= 1 << bit
    with pytest.raises(DecryptionError) as caught:
        aead.decrypt(bytes(envelope), ad)
    assert str(caught.value) == "decryption failed"


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(0, 32))
def test_aead_truncated_envelope_raises_decryption_error(aead: ScopeAead, cut: int) -> None:
    ad = b"ad"
    envelope = aead.encrypt(b"hello world", ad)
    with pytest.raises(DecryptionError):
        aead.decrypt(envelope[:cut], ad)


@pytest.mark.parametrize(
    "garbage", [b"", b"\x01", b"\x01" * 32, b"\x00" * 64, b"\x02" + b"\x00" * 40]
)
def test_aead_garbage_envelope_raises_decryption_error(aead: ScopeAead, garbage: bytes) -> None:
    with pytest.raises(DecryptionError):
        aead.decrypt(garbage, b"")


def test_aead_extra_trailing_byte_raises_decryption_error(aead: ScopeAead) -> None:
    envelope = aead.encrypt(b"hello", b"ad")
    with pytest.raises(DecryptionError):
        aead.decrypt(envelope + b"\x00", b"ad")


def test_aead_empty_associated_data_allowed_but_binding(aead: ScopeAead) -> None:
    envelope = aead.encrypt(b"hello", b"")
    assert aead.decrypt(envelope, b"") == b"hello"
    with pytest.raises(DecryptionError):
        aead.decrypt(envelope, b"x")


def test_aead_associated_data_is_required(aead: ScopeAead) -> None:
    with pytest.raises(TypeError):
        aead.encrypt(b"hello")  # type: ignore[call-arg]
    envelope = aead.encrypt(b"hello", b"")
    with pytest.raises(TypeError):
        aead.decrypt(envelope)  # type: ignore[call-arg]


_CHANGES = {
    "tenant": (Scope("tenant-b", "user-1", "agent-1"), NOTE_ID, "text", 1),
    "user": (Scope("tenant-a", "user-2", "agent-1"), NOTE_ID, "text", 1),
    "agent": (Scope("tenant-a", "user-1", "shared"), NOTE_ID, "text", 1),
    "note_id": (SCOPE, NOTE_ID[:-1] + "c", "text", 1),
    "field": (SCOPE, NOTE_ID, "context", 1),
    "key_version": (SCOPE, NOTE_ID, "text", 2),
}


@pytest.mark.parametrize("changed", sorted(_CHANGES))
def test_aead_changed_aad_field_raises_decryption_error(aead: ScopeAead, changed: str) -> None:
    assert aead.key_version == 1
    envelope = aead.encrypt(b"a private memory", associated_data(SCOPE, NOTE_ID, "text", 1))
    assert aead.decrypt(envelope, associated_data(SCOPE, NOTE_ID, "text", 1))
    with pytest.raises(DecryptionError):
        aead.decrypt(envelope, associated_data(*_CHANGES[changed]))


def test_aead_other_scope_handle_raises_decryption_error(module_keyring: Keyring) -> None:
    mine = module_keyring.aead_for(SCOPE)
    ad = associated_data(SCOPE, NOTE_ID, "text", mine.key_version)
    envelope = mine.encrypt(b"a private memory", ad)
    for other in (
        Scope("tenant-a", "user-1", "agent-2"),
        Scope("tenant-a", "user-2", "agent-1"),
        Scope("tenant-b", "user-1", "agent-1"),
    ):
        with pytest.raises(DecryptionError):
            module_keyring.aead_for(other).decrypt(envelope, ad)


_scope_ids = st.text(alphabet="ab.-", max_size=5).map(lambda v: "x" + v)
_free_text = st.text(alphabet="ab|:\x00é", max_size=6)
_aad_tuples = st.tuples(
    _scope_ids, _scope_ids, _scope_ids, _free_text, _free_text, st.integers(0, 2**32 - 1)
)


@settings(max_examples=500, deadline=None)
@given(first=_aad_tuples, second=_aad_tuples)
def test_associated_data_distinct_tuples_never_collide(
    first: tuple[str, str, str, str, str, int], second: tuple[str, str, str, str, str, int]
) -> None:
    def build(t: tuple[str, str, str, str, str, int]) -> bytes:
        return associated_data(Scope(t[0], t[1], t[2]), t[3], t[4], t[5])

    assert (build(first) == build(second)) == (first == second)


def test_associated_data_shifted_boundary_differs() -> None:
    a = associated_data(Scope("t", "u", "a"), "ab", "c", 1)
    b = associated_data(Scope("t", "u", "a"), "a", "bc", 1)
    assert a != b


@pytest.mark.parametrize("bad", [-1, 2**32, True, 1.0])
def test_associated_data_bad_key_version_raises_invalid_request(bad: object) -> None:
    with pytest.raises(InvalidRequest):
        associated_data(SCOPE, NOTE_ID, "text", bad)  # type: ignore[arg-type]


# Known-answer vectors: change the envelope or AAD layout and these fail.
KAT_KEY = bytes(range(32))
KAT_NONCE = bytes(range(100, 112))
KAT_SCOPE = Scope("t1", "u1", "a1")
KAT_PLAINTEXT = b"memvault known answer"
KAT_AAD_HEX = "01000000027431000000027531000000026131000000026e31000000047465787400000001"
KAT_ENVELOPE_HEX = (
    "01"
    "00000001"
    "6465666768696a6b6c6d6e6f"
    "257eb310189c3aea1e093187ad0b4a9c2cb1716ff9e398df8d445281b54348c9692f62090a"
)


def test_associated_data_known_answer_layout_pinned() -> None:
    assert FORMAT_VERSION == 1
    assert associated_data(KAT_SCOPE, "n1", "text", 1).hex() == KAT_AAD_HEX


def test_aead_known_answer_envelope_pinned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_primitives, "_key_source", lambda n: KAT_KEY[:n])
    monkeypatch.setattr(_primitives, "_nonce_source", lambda n: KAT_NONCE[:n])
    kr = Keyring.open(f"sqlite:///{tmp_path / 'kat.db'}", FakeKms())
    try:
        ad = associated_data(KAT_SCOPE, "n1", "text", 1)
        envelope = kr.aead_for(KAT_SCOPE).encrypt(KAT_PLAINTEXT, ad)
        assert envelope.hex() == KAT_ENVELOPE_HEX
        # The same bytes from AES-GCM directly: header | nonce | GCM(key, nonce, pt, header|aad).
        header = bytes.fromhex("0100000001")
        expected = (
            header + KAT_NONCE + AESGCM(KAT_KEY).encrypt(KAT_NONCE, KAT_PLAINTEXT, header + ad)
        )
        assert envelope == expected
        assert kr.aead_for(KAT_SCOPE).decrypt(bytes.fromhex(KAT_ENVELOPE_HEX), ad) == KAT_PLAINTEXT
    finally:
        kr.close()
