"""One error root for memvault. The API maps each class to an HTTP status in one table.

Messages never carry memory text, secrets or key material: they name the field or detector.
"""

from __future__ import annotations


class VaultError(Exception):
    """Root of every error memvault raises on purpose."""

    code = "internal_error"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.code)
        self.message = message or self.code


class InvalidRequest(VaultError):
    """Malformed input: a bad id, an empty field, an unknown option."""

    code = "invalid_request"


class UntrustedShare(InvalidRequest):
    """A write made in a session marked untrusted asked for sharing (`field`: `visibility` or
    `readers`): an untrusted note stays private to its owner (422 `invalid_request`)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


class NotFound(VaultError):
    """The thing does not exist, or lies outside the caller's readable scopes (never 403)."""

    code = "not_found"


class PermissionDenied(VaultError):
    """The caller can read the note but is not one of its writers."""

    code = "permission_denied"


class AuthenticationError(VaultError):
    """A missing, malformed, unknown or revoked API key."""

    code = "unauthorized"


class KeySuspended(AuthenticationError):
    """A key suspended by a read alert (`on_alert: suspend_key`), until an admin resumes it."""

    code = "key_suspended"


class Forbidden(VaultError):
    """The caller's role does not allow this endpoint."""

    code = "forbidden"


class Conflict(VaultError):
    """The resource already exists (a tenant id, a key id)."""

    code = "conflict"


class SessionUntrusted(VaultError):
    """The session named by `X-Session-Id` is marked untrusted: memory reads are refused (423)."""

    code = "session_untrusted"


class ScopeViolation(VaultError):
    """A store returned something outside the allowed scopes. Always a bug or an attack: loud."""

    code = "scope_violation"


class DecryptionError(VaultError):
    """Every decryption failure, whatever its cause: nothing for an attacker to distinguish."""

    code = "decryption_failed"

    def __init__(self, message: str = "decryption failed") -> None:
        super().__init__(message)


class KeyNotFound(VaultError):
    """No key material for a scope (never created, or shredded)."""

    code = "key_not_found"


class ScreenRefused(VaultError):
    """The write screen refused a text. `detector` names why; the text is never echoed."""

    code = "credential_refused"

    def __init__(self, code: str, detector: str, message: str = "") -> None:
        self.code = code
        self.detector = detector
        super().__init__(message or f"refused by {detector}")


class IndexError_(VaultError):
    """The vector index failed an operation."""

    code = "index_error"


class ScopeErasing(Conflict):
    """The scope is being erased (or its tenant deleted): the write is refused, nothing stored."""

    code = "scope_erasing"


class ScopeBusy(Conflict):
    """In-flight operations did not finish in time for an erase to start; nothing was erased."""

    code = "scope_busy"


class IsolationConflict(Conflict):
    """A key asked for another isolation than the agent already has (Mode A vs Mode B)."""

    code = "isolation_conflict"


class IsolationRefused(InvalidRequest):
    """A dedicated (Mode B) agent asked for something only Mode A has: sharing, `readers`."""

    code = "isolation_refused"
