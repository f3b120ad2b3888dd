"""The database side of `Idempotency-Key`: reserve a key, replay it, store or release its response.

Every access goes through `Database.session(tenant)` (PostgreSQL row-level security). A record is
either in flight (leased to one attempt, renewed by its heartbeat) or done (its sealed response).
"""

from __future__ import annotations

import logging
import secrets
import struct
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI
from sqlalchemy import ColumnElement, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from memvault.api.idempotency._keys import Call, StoredResponse, should_store
from memvault.errors import VaultError
from memvault.runtime.factory import Services
from memvault.store.models import IdempotencyRow
from memvault.tenancy.principals import (
    Principal,
)

log = logging.getLogger("memvault.api.idempotency")

LEASE_SECONDS = 30.0
"""An attempt whose lease ran out (its process died) may be taken over by a retry."""
HEARTBEAT_SECONDS = 10.0
"""A running attempt renews its lease this often."""
MAX_REQUEST_BYTES = 2 << 20
"""Largest request body buffered for an idempotent request: 413 `body_too_large` beyond (the
request guard's limit too; the largest valid body is well under 1 MiB)."""
MAX_RESPONSE_BYTES = 4 << 20
"""Largest response stored; a larger one is sent but not stored (the key is released)."""

IN_FLIGHT = "in_flight"
DONE = "done"

Kind = Literal["execute", "replay", "reused", "in_progress"]


@dataclass(frozen=True, slots=True)
class Begun:
    """What `IdempotencyEngine.begin` decided: run the request, replay it, or refuse it (409)."""

    kind: Kind
    response: StoredResponse | None = None


_EXECUTE = Begun("execute")
_REUSED = Begun("reused")
_IN_PROGRESS = Begun("in_progress")


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
        """The app's services (`app.state.services`), looked up on each use."""
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
        """A new attempt token of this process, live until `forget`."""
        token = f"{self.instance}.{secrets.token_hex(8)}"
        with self._lock:
            self._live.add(token)
        return token

    def forget(self, token: str) -> None:
        """The attempt no longer runs here."""
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
        operator_key: str | None = getattr(self.app.state, "operator_key", None)
        try:
            return self.services.keys.from_authorization(authorization, operator_key)
        except VaultError:
            return None

    # the record --------------------------------------------------------------------------------
    def begin(self, call: Call, token: str) -> tuple[Call, Begun]:
        """Reserve the key for `token`, or say why not (replay, reused, in progress)."""
        call = call.tagged(self.services.keyring.index_key(call.tenant))
        for _ in range(8):
            try:
                begun = self._begin_once(call, token, self.clock())
            except IntegrityError:
                begun = None  # a concurrent first use inserted the key: look again
            if begun is not None:
                return call, begun
        return call, _IN_PROGRESS

    def _attempt(self, call: Call, token: str, now: float, created_at: float) -> dict[str, Any]:
        """The columns of a new attempt by `token`: in flight, no response, leased from `now`."""
        return {
            "user_id": call.user,
            "agent_id": call.agent,
            "request_hash": call.request_tag,
            "state": IN_FLIGHT,
            "status_code": 0,
            "response_ct": None,
            "created_at": created_at,
            "lock_owner": token,
            "locked_until": now + self.lease,
        }

    def _begin_once(self, call: Call, token: str, now: float) -> Begun | None:
        with self.services.db.session(call.tenant) as sess:
            row = sess.execute(select(IdempotencyRow).where(*call.pk())).scalar_one_or_none()
            if row is None:
                sess.add(
                    IdempotencyRow(
                        tenant_id=call.tenant,
                        principal=call.key_id,
                        idem_key=call.key_tag,
                        **self._attempt(call, token, now, now),
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
                    return Begun("replay", stored)
                # Its scope key is gone (erased): the record is unreadable, hence absent.
                return self._take_over(sess, call, row, token, now, now)
            if self._abandoned(row, now):
                return self._take_over(sess, call, row, token, now, row.created_at)
            return _IN_PROGRESS

    def _take_over(
        self,
        sess: Session,
        call: Call,
        row: IdempotencyRow,
        token: str,
        now: float,
        created_at: float,
    ) -> Begun | None:
        """Compare-and-swap the row to a new attempt; None if another request won the race."""
        same_owner = (
            IdempotencyRow.lock_owner.is_(None)
            if row.lock_owner is None
            else IdempotencyRow.lock_owner == row.lock_owner
        )
        result = sess.execute(
            update(IdempotencyRow)
            .where(*call.pk(), IdempotencyRow.state == row.state, same_owner)
            .values(**self._attempt(call, token, now, created_at))
            .execution_options(synchronize_session=False)
        )
        return _EXECUTE if result.rowcount == 1 else None  # type: ignore[attr-defined]

    def _unseal(self, call: Call, row: IdempotencyRow) -> StoredResponse | None:
        if row.response_ct is None:
            return None
        try:
            aead = self.services.keyring.aead_for(call.scope, create=False)
            return StoredResponse.unpack(aead.decrypt(row.response_ct, call.aad()))
        except (VaultError, ValueError, struct.error):
            return None

    def touch(self, call: Call, token: str) -> None:
        """Renew the attempt's lease (heartbeat)."""
        with self.services.db.session(call.tenant) as sess:
            sess.execute(
                update(IdempotencyRow)
                .where(*call.pk(), *_owned_by(token))
                .values(locked_until=self.clock() + self.lease)
                .execution_options(synchronize_session=False)
            )

    def release(self, call: Call, token: str) -> None:
        """Forget the attempt: a retry with the key runs the request again."""
        with self.services.db.session(call.tenant) as sess:
            sess.execute(
                delete(IdempotencyRow)
                .where(*call.pk(), *_owned_by(token))
                .execution_options(synchronize_session=False)
            )

    def finish(self, call: Call, token: str, response: StoredResponse) -> None:
        """Store the sealed response, or release the key if it must not (or cannot) be stored.

        Runs inside the scope guard when the vault has one, so an erase either waits for the
        seal (and then deletes it) or refuses it: no key is recreated for an erased scope.
        """
        if not should_store(response.status):
            self.release(call, token)
            return
        guard = getattr(getattr(self.services.vault, "parts", None), "guard", None)
        using: AbstractContextManager[Any] = (
            guard.using(call.tenant, call.user, call.agent) if guard is not None else nullcontext()
        )
        try:
            with using:
                self._store(call, token, response)
        except VaultError as exc:  # scope being erased, keys gone: keep nothing
            log.info("idempotent response not stored (%s); key released", exc.code)
            self.release(call, token)

    def _store(self, call: Call, token: str, response: StoredResponse) -> None:
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
