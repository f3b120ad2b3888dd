"""Verify a memvault webhook delivery (client side; needs nothing of the server).

A delivery is a POST whose body is canonical JSON and whose `Memvault-Signature` header is
`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body under the endpoint's secret>`::

    from memvault.client.webhooks import verify

    event = verify(request_body_bytes, request.headers["Memvault-Signature"], secret)

`verify` returns the decoded event, or raises `SignatureError` when the signature does not
match, the header is malformed, or the timestamp is more than `tolerance_s` away from now
(a replayed delivery). Compare against every `v1` the header carries (rotation).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

HEADER = "Memvault-Signature"
DEFAULT_TOLERANCE_S = 300


class SignatureError(ValueError):
    """A webhook delivery whose signature does not verify (or is too old or malformed)."""


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The `Memvault-Signature` value of `body` at `timestamp` (for tests of a receiver)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(
    body: bytes | str,
    header: str,
    secret: str,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """The delivered event when `header` signs `body` under `secret` within `tolerance_s`
    seconds of `now` (default: the current time); `SignatureError` otherwise."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    timestamp: int | None = None
    macs: list[str] = []
    for part in (header or "").split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1" and value:
            macs.append(value)
    if timestamp is None or not macs:
        raise SignatureError("malformed Memvault-Signature header")
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        raise SignatureError("webhook timestamp outside the tolerance")
    expected = sign(raw, secret, timestamp).rpartition("v1=")[2]
    if not any(hmac.compare_digest(expected, mac) for mac in macs):
        raise SignatureError("webhook signature does not match")
    event: dict[str, Any] = json.loads(raw)
    return event
