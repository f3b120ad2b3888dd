"""The sealed session cookie: round trip, and every forged, cut, foreign or old cookie refused."""

from __future__ import annotations

import base64
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.console.session import MemorySessionStore, SessionSealer, token_digest

KEY = "mvk_acme.0123abcd.s3cret-value-for-the-session-test"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _flip(cookie: str, at: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4)))
    raw[at % len(raw)] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def test_session_sealer_round_trip_keeps_key_and_token() -> None:
    sealer = SessionSealer()
    session = sealer.new(KEY)
    opened = sealer.open(sealer.seal(session))
    assert opened == session
    assert opened is not None and opened.signed_in and opened.csrf_matches(session.csrf)


def test_session_cookie_does_not_carry_the_key_readably() -> None:
    sealer = SessionSealer()
    cookie = sealer.seal(sealer.new(KEY))
    raw = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
    for part in KEY.split("."):
        assert part.encode() not in raw and part not in cookie


@given(st.integers(min_value=0, max_value=10_000))
def test_session_any_flipped_byte_is_refused(at: int) -> None:
    sealer = _SEALER
    cookie = sealer.seal(sealer.new(KEY))
    assert sealer.open(_flip(cookie, at)) is None


_SEALER = SessionSealer()


@pytest.mark.parametrize("cookie", ["", "x", "AAAA", "%%%", "a" * 5000, "bm90LXNlYWxlZA"])
def test_session_garbage_cookie_is_refused(cookie: str) -> None:
    assert SessionSealer().open(cookie) is None


def test_session_cut_cookie_is_refused() -> None:
    sealer = SessionSealer()
    cookie = sealer.seal(sealer.new(KEY))
    assert sealer.open(cookie[:-4]) is None


def test_session_from_another_store_is_refused() -> None:
    cookie = SessionSealer().seal(SessionSealer().new(KEY))
    assert SessionSealer().open(cookie) is None


def test_session_opens_on_every_sealer_over_one_store_and_ends_everywhere() -> None:
    store = MemorySessionStore()
    first, second = SessionSealer(store), SessionSealer(store)  # two workers, one database
    session = first.new(KEY)
    cookie = first.seal(session)
    opened = second.open(cookie)
    assert opened == session and opened is not None and opened.api_key == KEY
    second.end(opened)
    assert first.open(cookie) is None


def test_session_store_holds_the_token_digest_never_the_token_or_key() -> None:
    store = MemorySessionStore()
    sealer = SessionSealer(store)
    session = sealer.new(KEY)
    (digest, (sealed, _expires)), *_ = store._rows.items()
    assert digest == token_digest(session.token) != session.token.hex()
    assert session.token not in sealed
    for part in KEY.split("."):
        assert part.encode() not in sealed


def test_session_expired_is_refused() -> None:
    clock = Clock()
    sealer = SessionSealer(lifetime=60, clock=clock)
    cookie = sealer.seal(sealer.new(KEY))
    clock.now += 59
    assert sealer.open(cookie) is not None
    clock.now += 2
    assert sealer.open(cookie) is None


def test_session_signed_out_visitor_expires_sooner_and_expired_rows_are_purged() -> None:
    clock = Clock()
    store = MemorySessionStore()
    sealer = SessionSealer(store, lifetime=600, anonymous_lifetime=60, clock=clock)
    anonymous = sealer.seal(sealer.new(None))
    signed_in = sealer.seal(sealer.new(KEY))
    clock.now += 61
    assert sealer.open(anonymous) is None and sealer.open(signed_in) is not None
    clock.now += 600
    sealer.new(None)  # a write purges what expired
    assert len(store._rows) == 1


def test_session_ended_is_refused_even_with_a_copy_of_the_cookie() -> None:
    sealer = SessionSealer()
    session = sealer.new(KEY)
    cookie = sealer.seal(session)
    other = sealer.seal(sealer.new(KEY))
    sealer.end(session)
    assert sealer.open(cookie) is None
    assert sealer.open(other) is not None


def test_session_csrf_token_mismatch_and_absence_fail() -> None:
    session = SessionSealer().new(None)
    assert not session.signed_in
    assert not session.csrf_matches(None)
    assert not session.csrf_matches("")
    assert not session.csrf_matches(session.csrf[:-1] + ("A" if session.csrf[-1] != "A" else "B"))


def test_session_and_sealer_never_show_the_key_and_refuse_pickling() -> None:
    sealer = SessionSealer()
    session = sealer.new(KEY)
    assert "s3cret" not in repr(session) and "s3cret" not in repr(sealer)
    with pytest.raises(TypeError):
        pickle.dumps(sealer)
