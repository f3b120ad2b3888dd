"""Where the MCP tools read and write: an embedded vault, or a memvault server through the SDK.

Both are bound to one scope when they are built, from one API key: the tools hand them text,
queries and note ids, never a tenant, user or agent. Both return the API's response shapes
(`NoteOut`, `SearchResult`, or the SDK's models of the same schemas), which `envelope.recalled`
labels. Failures leave as `BackendError` with a stable code and a message that names fields or
detectors, never a value.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from memvault.api.note_events import added_details, audit_note
from memvault.api.schemas import AddMemory, NoteOut, SearchMemories, SearchResult, check_uuid
from memvault.errors import AuthenticationError, Forbidden, NotFound, VaultError

if TYPE_CHECKING:
    from memvault.amem.service import Amem
    from memvault.runtime.factory import Services
    from memvault.tenancy.principals import Principal


class BackendError(Exception):
    """A tool call the backend refused or could not run: `code` as in the REST API's errors."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class AmemOff(BackendError):
    """The A-MEM tools on a server (or data directory) that runs with MEMVAULT_AMEM=off."""

    def __init__(self) -> None:
        super().__init__("amem_off", "A-MEM is off (MEMVAULT_AMEM=off)")


@dataclass(frozen=True, slots=True)
class NewMemory:
    """What `memory_add` stores: the tool's arguments, which the backend validates (the
    embedded one as the REST API does, the remote one on the server)."""

    text: str
    visibility: str = "private"
    note_type: str = "memory"
    topics: list[str] | None = None
    source: str | None = None
    ttl_days: float | None = None
    session_id: str | None = None
    occurred_at: str | None = None

    def given(self) -> dict[str, Any]:
        """The fields that were given (not None), by name."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: value for name, value in values.items() if value is not None}


class MemoryBackend(Protocol):
    """The memory operations of one bound scope."""

    name: str

    def add(self, memory: NewMemory) -> Any:
        """Store a memory; returns it as stored (`NoteOut` shape)."""

    def search(self, query: str, *, limit: int, topics: list[str] | None, mode: str) -> list[Any]:
        """Best matches first (`SearchResult` shape)."""

    def list(
        self, *, limit: int, offset: int, cursor: str | None = None
    ) -> tuple[list[Any], int, str | None]:
        """A page of readable memories, newest first (after `cursor` or at `offset`), the
        total, and the next page's cursor (None after the last page)."""

    def get(self, note_id: str) -> Any:
        """One readable memory (`NoteOut` shape)."""

    def delete(self, note_id: str, *, purge: bool) -> None:
        """Soft-delete (or purge) a memory the scope may write."""

    def consolidate(self) -> tuple[int, int]:
        """A-MEM consolidation of the scope's own notes: (groups, relations); `AmemOff`."""

    def quality_scan(self) -> builtins.list[tuple[str, builtins.list[str]]]:
        """A-MEM quality scan: (note id, reasons) per flagged note; `AmemOff`."""

    def close(self) -> None:
        """Release what the backend holds."""


def invalid_fields(exc: ValidationError) -> BackendError:
    """Name the fields and rules a validation error broke, never the values."""
    problems = []
    for err in exc.errors()[:10]:
        field = ".".join(str(p) for p in err.get("loc", ())) or "input"
        problems.append(f"{field}: {err.get('type', 'invalid')}")
    return BackendError("invalid_request", "; ".join(problems))


@contextmanager
def _vault_errors() -> Iterator[None]:
    try:
        yield
    except VaultError as exc:
        raise BackendError(exc.code, exc.message) from None
    except ValidationError as exc:
        raise invalid_fields(exc) from None


def _note_id(note_id: str) -> str:
    try:
        return check_uuid(note_id)
    except ValueError:
        raise BackendError("not_found", "no such note") from None


class EmbeddedBackend:
    """The vault of a local data directory, scoped to the principal of an agent key.

    With `MEMVAULT_AMEM` on (the default) A-MEM is installed on the services, without its
    worker and scheduler threads. Writes are audited like the REST routes' (ids and counts,
    never text), under the key's id.
    The backend owns `services` and closes them (and releases the data-directory lock).
    """

    name = "embedded"

    def __init__(self, services: Services, principal: Principal) -> None:
        if principal.role != "agent":
            raise Forbidden("memvault mcp needs an agent key (role agent)")
        self._services = services
        self._principal = principal
        self._vault = services.vault.scoped(principal.scope, dedicated=principal.dedicated)
        if services.settings.amem:
            from memvault.amem.wiring import install

            # As `memvault serve` does, less the background threads: with the offline judge
            # every add runs A-MEM inline; consolidation runs when the tool is called.
            install(services, worker=False, scheduler=False)

    @classmethod
    def authenticate(cls, services: Services, api_key: str) -> EmbeddedBackend:
        """Bind to the scope of `api_key`; AuthenticationError/Forbidden for a bad key."""
        return cls(services, services.keys.authenticate(api_key))

    def _audit(self, action: str, note_id: str | None, **details: object) -> None:
        audit_note(self._services, self._principal, action, note_id, **details)

    def add(self, memory: NewMemory) -> NoteOut:
        with _vault_errors():
            body = AddMemory.model_validate(memory.given())
            note = self._vault.add(**dict(body))  # the REST route's fields, as validated there
        self._audit("note.added", note.id, **added_details(note))
        return NoteOut.of(note)

    def search(
        self, query: str, *, limit: int, topics: list[str] | None, mode: str
    ) -> list[SearchResult]:
        with _vault_errors():
            body = SearchMemories.model_validate(
                {"query": query, "limit": limit, "topics": topics, "mode": mode}
            )
            hits = self._vault.search(
                body.query, limit=body.limit, topics=body.topics, mode=body.mode
            )
        self._audit("note.searched", None, results=len(hits), limit=body.limit)
        now = time.time()
        return [SearchResult.of(hit, now) for hit in hits]

    def list(
        self, *, limit: int, offset: int, cursor: str | None = None
    ) -> tuple[list[NoteOut], int, str | None]:
        with _vault_errors():
            page = self._vault.list_page(limit=limit, offset=offset, cursor=cursor)
        return [NoteOut.of(n) for n in page.notes], page.total, page.next_cursor

    def get(self, note_id: str) -> NoteOut:
        with _vault_errors():
            return NoteOut.of(self._vault.get(_note_id(note_id)))

    def delete(self, note_id: str, *, purge: bool) -> None:
        with _vault_errors():
            self._vault.delete(_note_id(note_id), purge=purge)
        self._audit("note.deleted", note_id, purge=purge)

    def _amem(self) -> Amem:
        from memvault.amem.wiring import installed

        amem = installed(self._services)
        if amem is None:
            raise AmemOff()
        return amem

    def consolidate(self) -> tuple[int, int]:
        from memvault.amem.maintenance import consolidate

        amem = self._amem()
        with _vault_errors():
            report = consolidate(amem, self._vault)
        scope = self._principal.scope
        self._services.audit.record(
            scope.tenant,
            self._principal.key_id,
            "notes.consolidated",
            subject={"user_id": scope.user, "agent_id": scope.agent},
            groups=report.groups,
            related=report.related,
        )
        return report.groups, report.related

    def quality_scan(self) -> builtins.list[tuple[str, builtins.list[str]]]:
        from memvault.amem.maintenance import quality_scan

        self._amem()
        with _vault_errors():
            found = quality_scan(self._vault)
        return [(f.note_id, [*f.reasons]) for f in found]

    def close(self) -> None:
        self._services.close()


class RemoteBackend:
    """A memvault server over REST, through the SDK (`memvault.client.Client`).

    The server binds the scope from the key on every request; this backend only forwards. SDK
    errors keep their REST error code.
    """

    name = "remote"

    def __init__(self, client: Any) -> None:
        self._client = client

    @classmethod
    def connect(
        cls, base_url: str, api_key: str, *, session_id: str | None = None
    ) -> RemoteBackend:
        """A client for `base_url`, checked once with a one-item list (a bad key fails here).

        With `session_id` (`MEMVAULT_SESSION_ID`) every later request names the session in
        `X-Session-Id`, so the reads answer `session_untrusted` while the runtime has it marked
        (the check itself names no session: a session marked before start still binds)."""
        from memvault.client import Client

        client = Client(base_url, api_key)
        backend = cls(client)
        try:
            backend.list(limit=1, offset=0)
        except BaseException:
            backend.close()
            raise
        client.session_id = session_id
        return backend

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BackendError:
            raise
        except ValidationError as exc:
            raise invalid_fields(exc) from None
        except Exception as exc:
            code = getattr(exc, "code", None)
            if isinstance(code, str) and code:
                message = getattr(exc, "message", None) or code
                raise BackendError(code, str(message)) from None
            raise BackendError(
                "unavailable", f"memvault server call failed ({type(exc).__name__})"
            ) from None

    def add(self, memory: NewMemory) -> Any:
        return self._call(self._client.add, **memory.given())

    def search(self, query: str, *, limit: int, topics: list[str] | None, mode: str) -> list[Any]:
        return list(self._call(self._client.search, query, limit=limit, topics=topics, mode=mode))

    def list(
        self, *, limit: int, offset: int, cursor: str | None = None
    ) -> tuple[list[Any], int, str | None]:
        page = self._call(self._client.list, limit=limit, offset=offset, cursor=cursor)
        return list(page.items), int(page.total), page.next_cursor

    def get(self, note_id: str) -> Any:
        return self._call(self._client.get, _note_id(note_id))

    def delete(self, note_id: str, *, purge: bool) -> None:
        self._call(self._client.delete, _note_id(note_id), purge=purge)

    def _amem_call(self, fn: Callable[[], Any]) -> Any:
        """An A-MEM call: 409 `conflict` (A-MEM off) or 404 (a server older than A-MEM) is
        `AmemOff`."""
        try:
            return self._call(fn)
        except BackendError as exc:
            if exc.code in ("conflict", "not_found"):
                raise AmemOff() from None
            raise

    def consolidate(self) -> tuple[int, int]:
        done = self._amem_call(self._client.consolidate)
        return int(done.groups), int(done.related)

    def quality_scan(self) -> builtins.list[tuple[str, builtins.list[str]]]:
        flagged = self._amem_call(self._client.quality_scan)
        return [(str(f.id), [*f.reasons]) for f in flagged]

    def close(self) -> None:
        close = getattr(self._client, "close", None)
        if callable(close):
            close()


def bind_failure(exc: BaseException) -> str:
    """The one line `memvault mcp` prints when it cannot bind a scope at start."""
    code = exc.code if isinstance(exc, BackendError) else getattr(exc, "code", "")
    if isinstance(exc, AuthenticationError) or code == "unauthorized":
        return "MEMVAULT_API_KEY was refused (missing, malformed, unknown or revoked key)"
    if isinstance(exc, Forbidden) or code == "forbidden":
        return "MEMVAULT_API_KEY is not an agent key (memvault mcp needs role agent)"
    detail = getattr(exc, "message", code)
    if code == "transport_error":
        return f"cannot reach the memvault server (MEMVAULT_URL or --url): {detail}"
    if isinstance(exc, NotFound | BackendError):
        return f"cannot bind the scope: {detail}"
    return f"cannot bind the scope ({type(exc).__name__})"
