"""`HmacKey`: HMAC-SHA256 from precomputed pad states, equal to the standard library's."""

from __future__ import annotations

import hashlib
import hmac
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.keyring._primitives import HmacKey

# Messages around SHA-256's 64-byte block and its 55/56-byte padding edge, and around hashlib's
# 2 KiB threshold above which `update` releases the GIL.
EDGE_LENGTHS = (0, 1, 31, 32, 55, 56, 63, 64, 65, 127, 128, 2047, 2048, 2049, 10_000)


@settings(max_examples=300, deadline=None)
@given(key=st.binary(min_size=32, max_size=32), message=st.binary(max_size=3000))
def test_digest_equals_the_standard_library(key: bytes, message: bytes) -> None:
    assert HmacKey(key).digest(message) == hmac.digest(key, message, "sha256")


@pytest.mark.parametrize("length", EDGE_LENGTHS)
def test_digest_equals_the_standard_library_at_block_edges(length: int) -> None:
    key = bytes(range(32))
    message = bytes((7 * i) % 256 for i in range(length))
    assert HmacKey(key).digest(message) == hmac.digest(key, message, "sha256")


def test_known_answer_does_not_depend_on_openssls_hmac() -> None:
    """RFC 2104 written out with hashlib alone, for a key with every bit pattern in its pads."""
    key = bytes(range(0xE0, 0x100))
    message = b"what do I know about the harbor plan?"
    block = key + bytes(32)
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in block) + message).digest()
    expected = hashlib.sha256(bytes(b ^ 0x5C for b in block) + inner).digest()
    assert HmacKey(key).digest(message) == expected


def test_repeated_and_interleaved_calls_do_not_disturb_the_key_state() -> None:
    key = HmacKey(b"k" * 32)
    first = key.digest(b"alpha")
    assert key.digest(b"beta") != first
    assert key.digest(b"alpha") == first
    assert key.derive(b"label").digest(b"alpha") == hmac.digest(
        hmac.digest(b"k" * 32, b"label", "sha256"), b"alpha", "sha256"
    )


def test_wrong_key_length_and_pickling_are_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        HmacKey(b"short")
    with pytest.raises(TypeError, match="key material"):
        pickle.dumps(HmacKey(b"k" * 32))
    assert "k" not in repr(HmacKey(b"k" * 32)).replace("HmacKey", "")
