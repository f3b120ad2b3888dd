"""`Idempotency-Key` on POST, PATCH and DELETE: a retried write replays its first response.

Stripe's contract, per principal (tenant + API key id), for 24 hours:

- the same key with the same request (method, path, query string, body digest) replays the first
  response (status, headers, body) with `Idempotent-Replayed: true`, without running it again;
- the same key with another request is 409 `idempotency_key_reused`;
- the same key while its first request still runs is 409 `idempotency_key_in_progress`;
- 5xx, 401 and 429 responses are not stored: the key is released and a retry runs again.

It is a pure ASGI middleware (`install_idempotency(app)`): it authenticates the caller with the
same `ApiKeys.authenticate` as the routes (a bad key passes through to the route's 401), buffers
the request body (bounded) and replays it to the app, and captures the response before sending it.

At rest nothing is in clear: the client's key and the request digest are HMAC tags under the
tenant's index key; the response is AES-256-GCM under the principal's scope key
(`Keyring.aead_for(Scope(tenant, user, agent))` of the key row), with associated data binding
purpose, tenant, user, agent, key id, the idempotency key and the request tag. Erasing the scope
shreds that key; a record that no longer decrypts is treated as absent. The operator key has no
tenant and no scope key: its requests are executed normally and never stored.

Every database access goes through `Database.session(tenant)` (PostgreSQL row-level security).
See docs/idempotency.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import struct
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from anyio import to_thread
from fastapi import FastAPI
from sqlalchemy import ColumnElement, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from memvault.errors import VaultError
from memvault.scope import Scope
from memvault.vault.factory import Services
from memvault.vault.idempotency_records import (
    TTL_SECONDS,
    count_idempotency_records,
    delete_idempotency_records,
    delete_tenant_idempotency_records,
    idempotency_sweeper,
    purge_expired,
)
from memvault.vault.principals import (
    TOKEN_PREFIX,
    Principal,
    operator_matches,
    operator_principal,
)
from memvault.vault.store.models import IdempotencyRow

log = logging.getLogger("memvault.api.idempotency")

__all__ = [
    "count_idempotency_records",
    "delete_idempotency_records",
    "delete_tenant_idempotency_records",
    "idempotency_sweeper",
    "install_idempotency",
    "purge_expired",
]

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
METHODS = frozenset({"POST", "PATCH", "DELETE"})
LEASE_SECONDS = 30.0
"""An attempt whose lease ran out (its process died) may be taken over by a retry."""
HEARTBEAT_SECONDS = 10.0
"""A running attempt renews its lease this often."""
MAX_KEY_CHARS = 255
MAX_REQUEST_BYTES = 2 << 20
"""Largest request body buffered for an idempotent request: 413 `body_too_large` beyond (the
request guard's limit too; the largest valid body is well under 1 MiB)."""
MAX_RESPONSE_BYTES = 4 << 20
"""Largest response stored; a larger one is sent but not stored (the key is released)."""
UNSTORED_STATUSES = frozenset({401, 429})
"""4xx answers that say nothing about the request itself: retrying may succeed."""

IN_FLIGHT = "in_flight"
DONE = "done"

_HEADER_BYTES = HEADER.lower().encode()
_AAD_LABEL = b"memvault.idempotency.v1"
_KEY_TAG_LABEL = "memvault.idempotency.key\x00"
_REQUEST_TAG_LABEL = "memvault.idempotency.request\x00"
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
# Headers recomputed on replay or meaningless in a replay; everything else is replayed.
_UNSTORED_HEADERS = frozenset(
    {
        b"content-length",
        b"date",
        b"server",
        b"set-cookie",
        b"connection",
        b"transfer-encoding",
        REPLAYED_HEADER.lower().encode(),
    }
)
_INVALID_KEY_MESSAGE = (
    f"header {HEADER} must be given once, with 1-{MAX_KEY_CHARS} printable ASCII characters"
)


# --- the request and its stored response ---------------------------------------------------------
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


def request_digest(method: str, path: str, query: bytes, body: bytes) -> str:
    """SHA-256 (hex) of what makes two requests "the same": method, path, query, body digest."""
    fields = (
        method.upper().encode(),
        path.encode("utf-8", "surrogateescape"),
        query,
        hashlib.sha256(body).digest(),
    )
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
class _Call:
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
        return Scope(self.tenant, self.user, self.agent)

    def aad(self) -> bytes:
        return _AAD_LABEL + _encode_fields(
            self.tenant.encode(),
            self.user.encode(),
            self.agent.encode(),
            self.key_id.encode(),
            self.key.encode(),
            self.request_tag.encode(),
        )

    def pk(self) -> list[ColumnElement[bool]]:
        return [
            IdempotencyRow.tenant_id == self.tenant,
            IdempotencyRow.principal == self.key_id,
            IdempotencyRow.idem_key == self.key_tag,
        ]


Kind = Literal["execute", "replay", "reused", "in_progress"]


@dataclass(frozen=True, slots=True)
class _Begun:
    kind: Kind
    response: StoredResponse | None = None


_EXECUTE = _Begun("execute")
_REUSED = _Begun("reused")
_IN_PROGRESS = _Begun("in_progress")


def _owned_by(token: str) -> list[ColumnElement[bool]]:
    return [IdempotencyRow.lock_owner == token, IdempotencyRow.state == IN_FLIGHT]


class IdempotencyEngine:
    """The database side: reserve a key, replay it, store or release its response.

    One per installed app. `instance` names this process's attempts; `_live` holds the attempts
    running here now, so an attempt of this process that is not live is known to be abandoned.
    """

    def __init__(
        self,
        app: FastAPI,
        *,
        clock: Callable[[], float],
        ttl_seconds: float,
        lease_seconds: float,
        heartbeat_seconds: float,
        max_request_bytes: int,
        max_response_bytes: int,
        single_process: bool | None,
    ) -> None:
        self.app = app
        self.clock = clock
        self.ttl = ttl_seconds
        self.lease = lease_seconds
        self.heartbeat = heartbeat_seconds
        self.max_request_bytes = max_request_bytes
        self.max_response_bytes = max_response_bytes
        self._single_process = single_process
        self.instance = secrets.token_hex(8)
        self._live: set[str] = set()
        self._lock = threading.Lock()

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    def single_process(self) -> bool:
        """True when no other server shares the database (the embedded SQLite default).

        Then an attempt of another process instance is dead for sure (a restart), and a retry
        after a crash need not wait for its lease to run out.
        """
        if self._single_process is not None:
            return self._single_process
        return not self.services.db.is_postgres

    # attempts of this process ------------------------------------------------------------------
    def new_token(self) -> str:
        token = f"{self.instance}.{secrets.token_hex(8)}"
        with self._lock:
            self._live.add(token)
        return token

    def forget(self, token: str) -> None:
        with self._lock:
            self._live.discard(token)

    def _abandoned(self, row: IdempotencyRow, now: float) -> bool:
        if row.locked_until is None or row.locked_until <= now:
            return True
        owner = row.lock_owner or ""
        with self._lock:
            if owner in self._live:
                return False
        return owner.partition(".")[0] == self.instance or self.single_process()

    # authentication ----------------------------------------------------------------------------
    def authenticate(self, authorization: str) -> Principal | None:
        """The caller as the routes will see it, or None (the route answers 401 itself)."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        if not token.startswith(TOKEN_PREFIX):
            operator_key: str | None = getattr(self.app.state, "operator_key", None)
            if operator_key and operator_matches(operator_key, token):
                return operator_principal()
            return None
        try:
            principal: Principal = self.services.keys.authenticate(token)
        except VaultError:
            return None
        return principal

    # the record --------------------------------------------------------------------------------
    def begin(self, call: _Call, token: str) -> tuple[_Call, _Begun]:
        """Reserve the key for `token`, or say why not (replay, reused, in progress)."""
        index_key = self.services.keyring.index_key(call.tenant)
        call = _Call(
            call.tenant,
            call.user,
            call.agent,
            call.key_id,
            call.key,
            call.digest,
            key_tag=index_key.tag(f"{_KEY_TAG_LABEL}{call.key_id}\x00{call.key}"),
            request_tag=index_key.tag(_REQUEST_TAG_LABEL + call.digest),
        )
        for _ in range(8):
            try:
                begun = self._begin_once(call, token, self.clock())
            except IntegrityError:
                begun = None  # a concurrent first use inserted the key: look again
            if begun is not None:
                return call, begun
        return call, _IN_PROGRESS

    def _begin_once(self, call: _Call, token: str, now: float) -> _Begun | None:
        with self.services.db.session(call.tenant) as sess:
            row = sess.execute(select(IdempotencyRow).where(*call.pk())).scalar_one_or_none()
            if row is None:
                sess.add(
                    IdempotencyRow(
                        tenant_id=call.tenant,
                        principal=call.key_id,
                        idem_key=call.key_tag,
                        user_id=call.user,
                        agent_id=call.agent,
                        request_hash=call.request_tag,
                        state=IN_FLIGHT,
                        status_code=0,
                        response_ct=None,
                        created_at=now,
                        lock_owner=token,
                        locked_until=now + self.lease,
                    )
                )
                sess.flush()
                return _EXECUTE
            if row.created_at + self.ttl <= now:  # expired: as if it were not there
                return self._take_over(sess, call, row, token, now, now)
            if row.request_hash != call.request_tag:
                return _REUSED
            if row.state == DONE:
                stored = self._unseal(call, row)
                if stored is not None:
                    return _Begun("replay", stored)
                # Its scope key is gone (erased): the record is unreadable, hence absent.
                return self._take_over(sess, call, row, token, now, now)
            if self._abandoned(row, now):
                return self._take_over(sess, call, row, token, now, row.created_at)
            return _IN_PROGRESS

    def _take_over(
        self,
        sess: Session,
        call: _Call,
        row: IdempotencyRow,
        token: str,
        now: float,
        created_at: float,
    ) -> _Begun | None:
        """Compare-and-swap the row to a new attempt; None if another request won the race."""
        same_owner = (
            IdempotencyRow.lock_owner.is_(None)
            if row.lock_owner is None
            else IdempotencyRow.lock_owner == row.lock_owner
        )
        result = sess.execute(
            update(IdempotencyRow)
            .where(*call.pk(), IdempotencyRow.state == row.state, same_owner)
            .values(
                user_id=call.user,
                agent_id=call.agent,
                request_hash=call.request_tag,
                state=IN_FLIGHT,
                status_code=0,
                response_ct=None,
                created_at=created_at,
                lock_owner=token,
                locked_until=now + self.lease,
            )
            .execution_options(synchronize_session=False)
        )
        return _EXECUTE if result.rowcount == 1 else None  # type: ignore[attr-defined]

    def _unseal(self, call: _Call, row: IdempotencyRow) -> StoredResponse | None:
        if row.response_ct is None:
            return None
        try:
            aead = self.services.keyring.aead_for(call.scope, create=False)
            return StoredResponse.unpack(aead.decrypt(row.response_ct, call.aad()))
        except (VaultError, ValueError, struct.error):
            return None

    def touch(self, call: _Call, token: str) -> None:
        """Renew the attempt's lease (heartbeat)."""
        with self.services.db.session(call.tenant) as sess:
            sess.execute(
                update(IdempotencyRow)
                .where(*call.pk(), *_owned_by(token))
                .values(locked_until=self.clock() + self.lease)
                .execution_options(synchronize_session=False)
            )

    def release(self, call: _Call, token: str) -> None:
        """Forget the attempt: a retry with the key runs the request again."""
        with self.services.db.session(call.tenant) as sess:
            sess.execute(
                delete(IdempotencyRow)
                .where(*call.pk(), *_owned_by(token))
                .execution_options(synchronize_session=False)
            )

    def finish(self, call: _Call, token: str, response: StoredResponse) -> None:
        """Store the sealed response, or release the key if it must not (or cannot) be stored.

        Runs inside the scope guard when the vault has one, so an erase either waits for the
        seal (and then deletes it) or refuses it: no key is recreated for an erased scope.
        """
        if not should_store(response.status):
            self.release(call, token)
            return
        guard = getattr(getattr(self.services.vault, "parts", None), "guard", None)
        using: AbstractContextManager[Any] = (
            guard.using(call.tenant, call.user) if guard is not None else nullcontext()
        )
        try:
            with using:
                self._store(call, token, response)
        except VaultError as exc:  # scope being erased, keys gone: keep nothing
            log.info("idempotent response not stored (%s); key released", exc.code)
            self.release(call, token)

    def _store(self, call: _Call, token: str, response: StoredResponse) -> None:
        with self.services.db.session(call.tenant) as sess:
            owned = sess.execute(
                select(IdempotencyRow.created_at)
                .where(*call.pk(), *_owned_by(token))
                .with_for_update()
            ).first()
            if owned is None:  # erased, purged or taken over meanwhile: nothing to seal
                return
            sealed = self.services.keyring.aead_for(call.scope).encrypt(response.pack(), call.aad())
            sess.execute(
                update(IdempotencyRow)
                .where(*call.pk(), *_owned_by(token))
                .values(
                    state=DONE,
                    status_code=response.status,
                    response_ct=sealed,
                    locked_until=None,
                )
                .execution_options(synchronize_session=False)
            )


# --- the ASGI middleware -------------------------------------------------------------------------
def _error(status: int, code: str, message: str) -> StoredResponse:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", b"application/json"),)
    if code == "idempotency_key_in_progress":
        headers += ((b"retry-after", b"1"),)
    return StoredResponse(status, headers, body)


async def _send(send: Send, response: StoredResponse, *, replayed: bool = False) -> None:
    headers = [*response.headers, (b"content-length", str(len(response.body)).encode())]
    if replayed:
        headers.append((REPLAYED_HEADER.lower().encode(), b"true"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def _in_thread(func: Callable[..., Any], *args: Any) -> Any:
    """Run blocking database work off the event loop, even while the request is cancelled."""
    with anyio.CancelScope(shield=True):
        return await to_thread.run_sync(func, *args)


class _Capture:
    """The app's `send`: holds the response until it is complete (or too large to store)."""

    def __init__(self, send: Send, limit: int, on_passthrough: Callable[[], Any]) -> None:
        self._send = send
        self._limit = limit
        self._on_passthrough = on_passthrough
        self.start: Message | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.passthrough = False

    async def __call__(self, message: Message) -> None:
        if self.passthrough:
            await self._send(message)
            return
        kind = message["type"]
        if kind == "http.response.start":
            self.start = message
            return
        if kind == "http.response.body":
            body = bytes(message.get("body", b""))
            self.chunks.append(body)
            self.size += len(body)
            if not message.get("more_body", False):
                self.complete = True
            elif self.size > self._limit:
                await self._stream(None)
            return
        await self._stream(message)  # anything else (trailers, pathsend): stop holding

    async def _stream(self, message: Message | None) -> None:
        self.passthrough = True
        await self._on_passthrough()
        if self.start is not None:
            await self._send(self.start)
        await self._send(
            {"type": "http.response.body", "body": b"".join(self.chunks), "more_body": True}
        )
        if message is not None:
            await self._send(message)

    def response(self) -> StoredResponse | None:
        if self.start is None or not self.complete:
            return None
        headers = tuple(
            (bytes(k).lower(), bytes(v))
            for k, v in self.start.get("headers", ())
            if bytes(k).lower() not in _UNSTORED_HEADERS
        )
        return StoredResponse(int(self.start["status"]), headers, b"".join(self.chunks))


class IdempotencyMiddleware:
    """Pure ASGI middleware; install it with `install_idempotency(app)`."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self._state = state  # `app.state`: a later `install_idempotency` may reconfigure

    @property
    def engine(self) -> IdempotencyEngine:
        engine: IdempotencyEngine = self._state.idempotency
        return engine

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in METHODS:
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        values = [v for k, v in headers if k.lower() == _HEADER_BYTES]
        if not values:
            await self.app(scope, receive, send)
            return
        authorization = next(
            (v.decode("latin-1") for k, v in headers if k.lower() == b"authorization"), ""
        )
        principal = await _in_thread(self.engine.authenticate, authorization)
        if principal is None:  # unauthenticated: the route answers 401, nothing is stored
            await self.app(scope, receive, send)
            return
        try:
            key = parse_idempotency_key(values)
        except InvalidIdempotencyKey as exc:
            await _send(send, _error(422, "invalid_request", str(exc)))
            return
        if principal.tenant is None or principal.user is None or principal.agent is None:
            await self.app(scope, receive, send)  # the operator key: executed, never stored
            return
        body, complete = await self._read_body(receive)
        if body is None:
            if complete:
                limit = self.engine.max_request_bytes
                message = f"a request with {HEADER} may carry at most {limit} bytes"
                await _send(send, _error(413, "body_too_large", message))
            return  # the client went away
        call = _Call(
            principal.tenant,
            principal.user,
            principal.agent,
            principal.key_id,
            key,
            request_digest(
                scope["method"], scope["path"], bytes(scope.get("query_string", b"")), body
            ),
        )
        await self._run(scope, receive, send, call, body)

    async def _read_body(self, receive: Receive) -> tuple[bytes | None, bool]:
        """(body, True); (None, True) when over the limit; (None, False) on disconnect."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, False
            if message["type"] != "http.request":
                continue
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.engine.max_request_bytes:
                return None, True
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), True

    async def _run(
        self, scope: AsgiScope, receive: Receive, send: Send, call: _Call, body: bytes
    ) -> None:
        engine = self.engine
        token = engine.new_token()
        try:
            call, begun = await _in_thread(engine.begin, call, token)
        except BaseException:
            engine.forget(token)
            raise
        if begun.kind != "execute":
            engine.forget(token)
            if begun.kind == "replay":
                assert begun.response is not None
                await _send(send, begun.response, replayed=True)
            elif begun.kind == "reused":
                message = f"this {HEADER} was used with a different request"
                await _send(send, _error(409, "idempotency_key_reused", message))
            else:
                message = f"a request with this {HEADER} is still in progress; retry later"
                await _send(send, _error(409, "idempotency_key_in_progress", message))
            return

        released = False

        async def release() -> None:
            nonlocal released
            if not released:
                released = True
                await _in_thread(engine.release, call, token)

        body_sent = False

        async def replay_receive() -> Message:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        capture = _Capture(send, engine.max_response_bytes, release)
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(call, token))
        try:
            try:
                await self.app(scope, replay_receive, capture)
            finally:
                heartbeat.cancel()
                await asyncio.wait([heartbeat])  # never raises the beat's own cancellation
            response = capture.response()
            if capture.passthrough:
                return
            if response is None or len(response.body) > engine.max_response_bytes:
                await release()
            else:
                try:
                    await _in_thread(engine.finish, call, token, response)
                except Exception:
                    log.exception("storing an idempotent response failed; key released")
                    await release()
            if response is not None:
                await _send(send, response)
        except BaseException:
            await release()
            raise
        finally:
            engine.forget(token)

    async def _heartbeat(self, call: _Call, token: str) -> None:
        while True:
            await asyncio.sleep(self.engine.heartbeat)
            try:
                await to_thread.run_sync(self.engine.touch, call, token)
            except Exception:  # the next beat, or the lease, settles it
                log.warning("idempotency lease renewal failed", exc_info=True)


def install_idempotency(
    app: FastAPI,
    *,
    clock: Callable[[], float] = time.time,
    ttl_seconds: float = TTL_SECONDS,
    lease_seconds: float = LEASE_SECONDS,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    single_process: bool | None = None,
) -> None:
    """Honour `Idempotency-Key` on POST, PATCH and DELETE of `app` (call before it serves).

    Added as the outermost user middleware, so a replay skips the routes entirely. Installing
    again (before the app serves) replaces the settings; the middleware is added once.
    `single_process` (default: True on SQLite, False on PostgreSQL) says that no other server
    shares the database, so a retry after a restart takes over a dead attempt at once instead
    of after its lease (`lease_seconds`).
    """
    installed = getattr(app.state, "idempotency", None) is not None
    engine = IdempotencyEngine(
        app,
        clock=clock,
        ttl_seconds=ttl_seconds,
        lease_seconds=lease_seconds,
        heartbeat_seconds=heartbeat_seconds,
        max_request_bytes=max_request_bytes,
        max_response_bytes=max_response_bytes,
        single_process=single_process,
    )
    app.state.idempotency = engine
    if not installed:
        app.add_middleware(IdempotencyMiddleware, state=app.state)
