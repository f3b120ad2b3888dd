"""An idempotent request and its stored response: the header, the digest, the tags, the seal.

Nothing here touches the database or the network: it parses `Idempotency-Key`, digests a request,
names a call by HMAC tags under the tenant's index key, binds the sealed response to the call by
associated data, and packs the response for sealing.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, replace

from sqlalchemy import ColumnElement

from memvault.keyring import IndexKey
from memvault.scope import Scope
from memvault.store.models import IdempotencyRow

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_CHARS = 255
UNSTORED_STATUSES = frozenset({401, 429})
"""4xx answers that say nothing about the request itself: retrying may succeed."""

_AAD_LABEL = b"memvault.idempotency.v1"
_KEY_TAG_LABEL = "memvault.idempotency.key\x00"
_REQUEST_TAG_LABEL = "memvault.idempotency.request\x00"
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_INVALID_KEY_MESSAGE = (
    f"header {HEADER} must be given once, with 1-{MAX_KEY_CHARS} printable ASCII characters"
)


class InvalidIdempotencyKey(ValueError):
    """The header breaks the grammar; its value is never echoed."""


def parse_idempotency_key(values: list[bytes]) -> str:
    """The key of the header values given, or `InvalidIdempotencyKey`.

    One header, 1-255 characters of printable ASCII (0x20-0x7E) once surrounding blanks
    (HTTP's optional whitespace) are stripped.
    """
    if len(values) != 1:
        raise InvalidIdempotencyKey(_INVALID_KEY_MESSAGE)
    raw = values[0].strip(b" \t")
    if not 1 <= len(raw) <= MAX_KEY_CHARS or any(b < 0x20 or b > 0x7E for b in raw):
        raise InvalidIdempotencyKey(_INVALID_KEY_MESSAGE)
    return raw.decode("ascii")


SESSION_HEADER = b"x-session-id"
"""A write's session (`X-Session-Id`) is part of the request: in a session marked untrusted
the same body is stored `untrusted`, so a replay from another session is another request."""


def request_digest(
    method: str, path: str, query: bytes, body: bytes, session: bytes | None = None
) -> str:
    """SHA-256 (hex) of what makes two requests "the same": method, path, query, body digest
    and, when the request names one, its session (`X-Session-Id`). A request without the
    header digests as it did before the session counted."""
    fields = [
        method.upper().encode(),
        path.encode("utf-8", "surrogateescape"),
        query,
        hashlib.sha256(body).digest(),
    ]
    if session is not None:
        fields += [SESSION_HEADER, session]
    return hashlib.sha256(_encode_fields(*fields)).hexdigest()


def _encode_fields(*fields: bytes) -> bytes:
    return b"".join(_U32.pack(len(f)) + f for f in fields)


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """What a replay sends: status, headers (without Content-Length) and body."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    def pack(self) -> bytes:
        """The response as bytes for sealing (length-prefixed headers, then the body)."""
        out = [_U16.pack(self.status), _U32.pack(len(self.headers))]
        for name, value in self.headers:
            out.append(_encode_fields(name, value))
        out.append(self.body)
        return b"".join(out)

    @classmethod
    def unpack(cls, data: bytes) -> StoredResponse:
        """Parse `pack`'s output; ValueError (or struct.error) for anything else."""
        (status,) = _U16.unpack_from(data, 0)
        (count,) = _U32.unpack_from(data, 2)
        pos = 6
        headers: list[tuple[bytes, bytes]] = []
        for _ in range(count):
            pair: list[bytes] = []
            for _ in range(2):
                (n,) = _U32.unpack_from(data, pos)
                pos += 4
                if pos + n > len(data):
                    raise ValueError("truncated stored response")
                pair.append(data[pos : pos + n])
                pos += n
            headers.append((pair[0], pair[1]))
        return cls(status, tuple(headers), data[pos:])


def should_store(status: int) -> bool:
    """2xx-4xx are stored, except 401 and 429; 5xx never (a retry runs again)."""
    return status < 500 and status not in UNSTORED_STATUSES


@dataclass(frozen=True, slots=True)
class Call:
    """One idempotent request: who, which key, and the tags that stand for them at rest."""

    tenant: str
    user: str
    agent: str
    key_id: str
    key: str
    digest: str
    key_tag: str = ""
    request_tag: str = ""

    @property
    def scope(self) -> Scope:
        """The principal's scope, whose key seals the response."""
        return Scope(self.tenant, self.user, self.agent)

    def tagged(self, index_key: IndexKey) -> Call:
        """This call with its key and request tags under the tenant's index key."""
        return replace(
            self,
            key_tag=index_key.tag(f"{_KEY_TAG_LABEL}{self.key_id}\x00{self.key}"),
            request_tag=index_key.tag(_REQUEST_TAG_LABEL + self.digest),
        )

    def aad(self) -> bytes:
        """Associated data of the sealed response: purpose, principal, key and request tag."""
        return _AAD_LABEL + _encode_fields(
            self.tenant.encode(),
            self.user.encode(),
            self.agent.encode(),
            self.key_id.encode(),
            self.key.encode(),
            self.request_tag.encode(),
        )

    def pk(self) -> list[ColumnElement[bool]]:
        """The record's primary key: tenant, principal (API key id) and key tag."""
        return [
            IdempotencyRow.tenant_id == self.tenant,
            IdempotencyRow.principal == self.key_id,
            IdempotencyRow.idem_key == self.key_tag,
        ]
