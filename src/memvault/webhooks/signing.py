"""The `Memvault-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256>`, as Stripe signs.

The MAC is over `f"{t}.".encode() + body` under the endpoint's secret. The client's
`memvault.client.webhooks.verify` checks the same format (the client cannot import this module).
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "Memvault-Signature"


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The header value signing `body` at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"
