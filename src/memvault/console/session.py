"""The console's session: the signed-in API key, sealed in a cookie the browser cannot read.

The cookie holds `base64url(nonce || AES-256-GCM(json{key, csrf, exp}))` under a key drawn at
random when the process starts (so a restart signs everyone out, and no secret is configured).
The associated data names the format, so no other sealed value of the service fits. Every failure
to open a cookie (forged, cut, another process's, expired) is the same `None`: nothing for a
forger to distinguish. The raw API key is never in a readable cookie, a page or a log.

The synchronizer CSRF token travels inside the sealed session and in every form; a POST whose
token does not match its own session is refused. A signed-out visitor gets a session too (no
key, a token), so the sign-in form is protected the same way.

Sign-out ends a session on the server too: its token joins a per-process list of ended sessions
until the session would have expired, so a copy of the cookie stops working at once.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

COOKIE = "memvault_console"
"""The cookie's name; its path is `/console`, so the REST API never sees it."""
LIFETIME_SECONDS = 8 * 3600
"""A session ends this long after sign-in, whatever the activity (sign in again)."""
MAX_COOKIE_CHARS = 2048
_FORMAT = b"memvault-console-session-v1"
_NONCE = 12


@dataclass(frozen=True, slots=True)
class Session:
    """An opened session. `api_key` is None before sign-in. Its repr never shows the key."""

    api_key: str | None
    csrf: str
    expires_at: float

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


class SessionSealer:
    """Seals and opens session cookies under a per-process AES-256-GCM key."""

    def __init__(
        self,
        *,
        lifetime: float = LIFETIME_SECONDS,
        clock: Callable[[], float] = time.time,
        key: bytes | None = None,
    ) -> None:
        self._aead = AESGCM(key if key is not None else AESGCM.generate_key(bit_length=256))
        self._lifetime = lifetime
        self._clock = clock
        self._ended: dict[str, float] = {}
        self._ended_lock = threading.Lock()

    @property
    def lifetime(self) -> float:
        return self._lifetime

    def new(self, api_key: str | None) -> Session:
        """A fresh session (a new CSRF token every time: sign-in never keeps the old one)."""
        return Session(api_key, secrets.token_urlsafe(32), self._clock() + self._lifetime)

    def seal(self, session: Session) -> str:
        """The cookie value for `session`."""
        plain = json.dumps(
            {"k": session.api_key, "c": session.csrf, "e": session.expires_at},
            separators=(",", ":"),
        ).encode()
        nonce = os.urandom(_NONCE)
        sealed = nonce + self._aead.encrypt(nonce, plain, _FORMAT)
        return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")

    def open(self, cookie: str | None) -> Session | None:
        """The session in `cookie`, or None for any cookie that is absent, invalid or expired."""
        if not cookie or len(cookie) > MAX_COOKIE_CHARS:
            return None
        try:
            raw = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
            if len(raw) <= _NONCE:
                return None
            data: Any = json.loads(self._aead.decrypt(raw[:_NONCE], raw[_NONCE:], _FORMAT))
        except (InvalidTag, ValueError, binascii.Error):
            return None
        if not isinstance(data, dict):
            return None
        key, csrf, expires = data.get("k"), data.get("c"), data.get("e")
        if key is not None and not isinstance(key, str):
            return None
        if not isinstance(csrf, str) or not isinstance(expires, int | float):
            return None
        now = self._clock()
        if expires <= now:
            return None
        with self._ended_lock:
            if csrf in self._ended:
                return None
        return Session(key, csrf, float(expires))

    def end(self, session: Session) -> None:
        """Refuse `session` from now on (sign-out), until it would have expired anyway."""
        now = self._clock()
        with self._ended_lock:
            self._ended = {token: at for token, at in self._ended.items() if at > now}
            self._ended[session.csrf] = session.expires_at

    def __repr__(self) -> str:
        return "SessionSealer(<key hidden>)"

    def __getstate__(self) -> NoReturn:
        raise TypeError("a SessionSealer holds a key and cannot be pickled")
