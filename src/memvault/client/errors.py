"""The SDK's exceptions: one class per API error code, all under `MemvaultError`.

The server answers every error as `{"error": {"code", "message"}}`, and its messages name fields,
rules and detectors, never submitted values. The exceptions carry that code and message (and the
status), never a request body, so printing or logging one is safe.
"""

from __future__ import annotations

import re
from typing import Any

from memvault import errors as server_errors

_DETECTOR = re.compile(r"(?:(?P<field>[A-Za-z_][\w.]*) )?refused by (?P<detector>[\w.:-]+)")


class MemvaultError(Exception):
    """Root of every error the SDK raises.

    `code` is the API's machine-readable code (`invalid_request`, `not_found`, ...), `status` the
    HTTP status (0 when no response came back), `message` the server's message.
    """

    code: str = "error"

    def __init__(self, message: str = "", *, code: str | None = None, status: int = 0) -> None:
        self.code = code or type(self).code
        self.status = status
        self.message = message or self.code
        super().__init__(f"{self.code}: {self.message}" if status == 0 else self._text())

    def _text(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


class TransportError(MemvaultError):
    """No answer from the server (connection refused or reset, timeout) after every retry."""

    code = "transport_error"


class VerificationError(MemvaultError):
    """A signed receipt or an audit export did not verify against the server's public keys."""

    code = "verification_failed"


class ErasureTimeout(MemvaultError):
    """An erase job did not finish within the client's wait; `job_id` lets you poll it later."""

    code = "erasure_timeout"

    def __init__(self, job_id: str, message: str = "") -> None:
        self.job_id = job_id
        super().__init__(message or "the erase job is still running")


class ApiError(MemvaultError):
    """An error response from the server."""


class InvalidRequestError(ApiError):
    """422 `invalid_request`: a field, query or header outside its schema."""

    code = server_errors.InvalidRequest.code


class MalformedRequestError(InvalidRequestError):
    """400: the body is not JSON (`malformed_json`, `malformed_body`) or nests too deep."""

    code = "malformed_json"


class BodyTooLargeError(InvalidRequestError):
    """413 `body_too_large`: the request body exceeds 2 MiB."""

    code = "body_too_large"


class UnsupportedMediaTypeError(InvalidRequestError):
    """415 `unsupported_media_type`."""

    code = "unsupported_media_type"


class MethodNotAllowedError(ApiError):
    """405 `method_not_allowed`."""

    code = "method_not_allowed"


class AuthenticationError(ApiError):
    """401 `unauthorized`: a missing, invalid or revoked API key."""

    code = server_errors.AuthenticationError.code


class ForbiddenError(ApiError):
    """403 `forbidden`: the key's role may not call this endpoint."""

    code = server_errors.Forbidden.code


class PermissionDeniedError(ForbiddenError):
    """403 `permission_denied`: the caller may read the note but is not one of its writers."""

    code = server_errors.PermissionDenied.code


class NotFoundError(ApiError):
    """404 `not_found`: unknown id, or outside the caller's readable scopes."""

    code = server_errors.NotFound.code


class ConflictError(ApiError):
    """409 `conflict`: the resource exists (a tenant id)."""

    code = server_errors.Conflict.code


class ScopeErasingError(ConflictError):
    """409 `scope_erasing`: the scope is being erased; the write was not stored."""

    code = "scope_erasing"


class ScopeBusyError(ConflictError):
    """409 `scope_busy`: an erase could not start because operations outlasted its drain."""

    code = "scope_busy"


class IdempotencyKeyReusedError(ConflictError):
    """409 `idempotency_key_reused`: the key was already used with another request."""

    code = "idempotency_key_reused"


class IdempotencyKeyInProgressError(ConflictError):
    """409 `idempotency_key_in_progress`: the first request with this key still runs."""

    code = "idempotency_key_in_progress"


class IsolationConflictError(ConflictError):
    """409 `isolation_conflict`: a key asked for another isolation than the agent has (an
    agent's isolation never changes); nothing was stored."""

    code = "isolation_conflict"


class IsolationRefusedError(InvalidRequestError):
    """422 `isolation_refused`: a dedicated (Mode B) agent wrote `shared` or `readers`; the
    message names the field."""

    code = "isolation_refused"


class ScreenRefusedError(InvalidRequestError):
    """422: the write screen refused a value. `detector` names the detector that fired and
    `field` the field (`text`, `source`, `topics`, ...); the value itself is never echoed."""

    code = server_errors.ScreenRefused.code

    def __init__(self, message: str = "", *, code: str | None = None, status: int = 0) -> None:
        match = _DETECTOR.search(message)
        self.detector: str = match.group("detector") if match else (code or self.code)
        self.field: str = (match.group("field") or "text") if match else "text"
        super().__init__(message, code=code, status=status)


class CredentialRefusedError(ScreenRefusedError):
    """422 `credential_refused`: the value holds a credential (an API key, a password, ...)."""

    code = "credential_refused"


class PiiRefusedError(ScreenRefusedError):
    """422 `pii_refused`: the tenant policy refuses this kind of personal data."""

    code = "pii_refused"


class TooShortError(ScreenRefusedError):
    """422 `too_short`: the text is too short to be a memory."""

    code = "too_short"


class SuspiciousSharedError(ScreenRefusedError):
    """422 `suspicious_shared`: a shared note looks like a prompt injection."""

    code = "suspicious_shared"


class SessionUntrustedError(ApiError):
    """423 `session_untrusted`: the read named (`X-Session-Id`) a session marked untrusted;
    no memory was returned."""

    code = "session_untrusted"


class RateLimitedError(ApiError):
    """429 `too_many_requests` (after every retry)."""

    code = "too_many_requests"


class UnavailableError(ApiError):
    """503 `unavailable` (after every retry)."""

    code = "unavailable"


class ServerError(ApiError):
    """500: an unexpected failure or a lower layer's (`internal_error`, `scope_violation`,
    `decryption_failed`, `key_not_found`, `index_error`). `correlation_id` matches the server
    log."""

    code = "internal_error"

    def __init__(self, message: str = "", *, code: str | None = None, status: int = 0) -> None:
        self.correlation_id: str | None = None
        super().__init__(message, code=code, status=status)


EXCEPTION_BY_CODE: dict[str, type[ApiError]] = {
    cls.code: cls
    for cls in (
        InvalidRequestError,
        MalformedRequestError,
        BodyTooLargeError,
        UnsupportedMediaTypeError,
        MethodNotAllowedError,
        AuthenticationError,
        ForbiddenError,
        PermissionDeniedError,
        NotFoundError,
        ConflictError,
        ScopeErasingError,
        ScopeBusyError,
        IdempotencyKeyReusedError,
        IdempotencyKeyInProgressError,
        IsolationConflictError,
        IsolationRefusedError,
        CredentialRefusedError,
        PiiRefusedError,
        TooShortError,
        SuspiciousSharedError,
        SessionUntrustedError,
        RateLimitedError,
        UnavailableError,
        ServerError,
    )
}
EXCEPTION_BY_CODE.update(
    {
        "malformed_body": MalformedRequestError,
        "body_too_deep": MalformedRequestError,
        "scope_violation": ServerError,
        "decryption_failed": ServerError,
        "key_not_found": ServerError,
        "index_error": ServerError,
    }
)

EXCEPTION_BY_STATUS: dict[int, type[ApiError]] = {
    400: MalformedRequestError,
    401: AuthenticationError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    413: BodyTooLargeError,
    415: UnsupportedMediaTypeError,
    422: InvalidRequestError,
    423: SessionUntrustedError,
    429: RateLimitedError,
    503: UnavailableError,
}


def error_from_response(status: int, body: Any, headers: dict[str, str] | None = None) -> ApiError:
    """The exception for an error response: by its code, else by its status."""
    code = ""
    message = ""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = str(body["error"].get("code") or "")
        message = str(body["error"].get("message") or "")
    cls = EXCEPTION_BY_CODE.get(code)
    if cls is None:
        cls = EXCEPTION_BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    error = cls(message or f"HTTP {status}", code=code or cls.code, status=status)
    if isinstance(error, ServerError) and headers is not None:
        error.correlation_id = headers.get("x-correlation-id")
    return error
