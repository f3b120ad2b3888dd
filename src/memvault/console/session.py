"""The console's session: a random token in a cookie, the session itself in the database.

The cookie holds only `base64url(token)`, 32 random bytes. The session (the signed-in API key
and the CSRF token) is stored by a `SessionStore` under the token's SHA-256, sealed with
AES-256-GCM under a key derived from the token (HKDF-SHA256): the store never holds the token,
and neither a copy of the store nor a copy of the cookie alone gives the API key. On a
deployment the store is the `console_sessions` table (`DatabaseSessionStore`), so a session
opened on one worker is the same session on every other worker, survives a restart, and a
sign-out on any worker ends it everywhere at once (the row is deleted). Rows expire: a session
ends `LIFETIME_SECONDS` after sign-in whatever the activity, a signed-out visitor's session
after `ANONYMOUS_LIFETIME_SECONDS`; expired rows are refused and purged.

Every failure to open a cookie (forged, cut, unknown, ended, expired) is the same `None`:
nothing for a forger to distinguish. The raw API key is never in a cookie, a page or a log.

The synchronizer CSRF token travels inside the sealed session and in every form; a POST whose
token does not match its own session is refused. A signed-out visitor gets a session too (no
key, a token), so the sign-in form is protected the same way.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

COOKIE = "memvault_console"
"""The cookie's name; its path is `/console`, so the REST API never sees it."""
LIFETIME_SECONDS = 8 * 3600
"""A session ends this long after sign-in, whatever the activity (sign in again)."""
ANONYMOUS_LIFETIME_SECONDS = 3600
"""A signed-out visitor's session (the sign-in form's CSRF token) ends this long after it began."""
MAX_COOKIE_CHARS = 2048
_FORMAT = b"memvault-console-session-v2"
_TOKEN = 32
_NONCE = 12


class SessionStore(Protocol):
    """Where sessions live, keyed by the SHA-256 (hex) of their token."""

    def put(self, digest: str, sealed: bytes, expires_at: float, now: float) -> None:
        """Store a session (and purge the sessions expired at `now`)."""

    def get(self, digest: str) -> tuple[bytes, float] | None:
        """The sealed session and its expiry, or None."""

    def delete(self, digest: str) -> None:
        """End a session (nothing if it is absent)."""


class MemorySessionStore:
    """Sessions in this process only (unit tests; a console without a database)."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[bytes, float]] = {}
        self._lock = threading.Lock()

    def put(self, digest: str, sealed: bytes, expires_at: float, now: float) -> None:
        with self._lock:
            self._rows = {d: row for d, row in self._rows.items() if row[1] > now}
            self._rows[digest] = (sealed, expires_at)

    def get(self, digest: str) -> tuple[bytes, float] | None:
        with self._lock:
            return self._rows.get(digest)

    def delete(self, digest: str) -> None:
        with self._lock:
            self._rows.pop(digest, None)


@dataclass(frozen=True, slots=True)
class Session:
    """An opened session. `api_key` is None before sign-in. Its repr never shows the key."""

    api_key: str | None
    csrf: str
    expires_at: float
    token: bytes = field(default=b"", compare=False)

    @property
    def signed_in(self) -> bool:
        return self.api_key is not None

    def csrf_matches(self, presented: str | None) -> bool:
        """Whether a form's token is this session's (constant-time)."""
        if not presented:
            return False
        return hmac.compare_digest(self.csrf.encode(), presented.encode())

    def __repr__(self) -> str:
        return f"Session(signed_in={self.signed_in}, expires_at={self.expires_at:.0f})"


def token_digest(token: bytes) -> str:
    """The key of a session in its store: SHA-256 of the token, hex (the token is never stored)."""
    return hashlib.sha256(token).hexdigest()


class SessionSealer:
    """Makes, opens and ends sessions in a `SessionStore`; the cookie carries only the token."""

    def __init__(
        self,
        store: SessionStore | None = None,
        *,
        lifetime: float = LIFETIME_SECONDS,
        anonymous_lifetime: float = ANONYMOUS_LIFETIME_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store: SessionStore = store if store is not None else MemorySessionStore()
        self._lifetime = lifetime
        self._anonymous_lifetime = min(anonymous_lifetime, lifetime)
        self._clock = clock

    @property
    def lifetime(self) -> float:
        return self._lifetime

    def new(self, api_key: str | None) -> Session:
        """A fresh session, stored (a new token and CSRF token every time)."""
        now = self._clock()
        lifetime = self._lifetime if api_key is not None else self._anonymous_lifetime
        session = Session(api_key, secrets.token_urlsafe(32), now + lifetime, os.urandom(_TOKEN))
        digest = token_digest(session.token)
        plain = json.dumps({"k": session.api_key, "c": session.csrf}, separators=(",", ":"))
        nonce = os.urandom(_NONCE)
        sealed = nonce + _aead(session.token).encrypt(nonce, plain.encode(), _aad(digest))
        self._store.put(digest, sealed, session.expires_at, now)
        return session

    def seal(self, session: Session) -> str:
        """The cookie value for `session`: its token, base64url."""
        return base64.urlsafe_b64encode(session.token).rstrip(b"=").decode("ascii")

    def open(self, cookie: str | None) -> Session | None:
        """The session in `cookie`, or None for any cookie that is absent, invalid, ended or
        expired."""
        if not cookie or len(cookie) > MAX_COOKIE_CHARS:
            return None
        try:
            token = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
        except (ValueError, binascii.Error):
            return None
        if len(token) != _TOKEN:
            return None
        digest = token_digest(token)
        row = self._store.get(digest)
        if row is None:
            return None
        sealed, expires = row
        if expires <= self._clock():
            self._store.delete(digest)
            return None
        try:
            plain = _aead(token).decrypt(sealed[:_NONCE], sealed[_NONCE:], _aad(digest))
            data: Any = json.loads(plain)
        except (InvalidTag, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        key, csrf = data.get("k"), data.get("c")
        if (key is not None and not isinstance(key, str)) or not isinstance(csrf, str):
            return None
        return Session(key, csrf, float(expires), token)

    def end(self, session: Session) -> None:
        """End `session` in the store: every worker refuses its cookie from now on."""
        if session.token:
            self._store.delete(token_digest(session.token))

    def __repr__(self) -> str:
        return "SessionSealer(<sessions hidden>)"

    def __getstate__(self) -> NoReturn:
        raise TypeError("a SessionSealer holds sessions and cannot be pickled")


def _aead(token: bytes) -> AESGCM:
    kdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_FORMAT)
    return AESGCM(kdf.derive(token))


def _aad(digest: str) -> bytes:
    return _FORMAT + b"|" + digest.encode("ascii")
