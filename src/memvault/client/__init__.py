"""The memvault Python SDK: `Client` (sync) and `AsyncClient` (asyncio) on httpx.

```python
from memvault.client import Client

with Client("http://127.0.0.1:8700", api_key="mvk_...") as mv:
    note = mv.add("The user prefers green tea")
    hits = mv.search("what does the user drink?")
```

Models are the API's own response schemas; every API error code raises a subclass of
`MemvaultError`; writes carry an `Idempotency-Key` so retries never duplicate. See docs/sdk.md.
"""

from __future__ import annotations

from memvault.client.aio import AsyncClient
from memvault.client.errors import (
    ApiError,
    AuthenticationError,
    BodyTooLargeError,
    ConflictError,
    CredentialRefusedError,
    ErasureTimeout,
    ForbiddenError,
    IdempotencyKeyInProgressError,
    IdempotencyKeyReusedError,
    InvalidRequestError,
    IsolationConflictError,
    IsolationRefusedError,
    MalformedRequestError,
    MemvaultError,
    MethodNotAllowedError,
    NotFoundError,
    PermissionDeniedError,
    PiiRefusedError,
    RateLimitedError,
    ScopeBusyError,
    ScopeErasingError,
    ScreenRefusedError,
    ServerError,
    SessionUntrustedError,
    SuspiciousSharedError,
    TooShortError,
    TransportError,
    UnavailableError,
    UnsupportedMediaTypeError,
    VerificationError,
)
from memvault.client.models import (
    MEMORY_NOTICE,
    AuditExport,
    Consolidation,
    DialogueDecision,
    DialogueResult,
    Erasure,
    IssuedKey,
    Link,
    Note,
    Page,
    Policy,
    QualityFlag,
    SearchHit,
    TtlDefaults,
)
from memvault.client.sync import Client

__all__ = [
    "MEMORY_NOTICE",
    "ApiError",
    "AsyncClient",
    "AuditExport",
    "AuthenticationError",
    "BodyTooLargeError",
    "Client",
    "ConflictError",
    "Consolidation",
    "CredentialRefusedError",
    "DialogueDecision",
    "DialogueResult",
    "Erasure",
    "ErasureTimeout",
    "ForbiddenError",
    "IdempotencyKeyInProgressError",
    "IdempotencyKeyReusedError",
    "InvalidRequestError",
    "IsolationConflictError",
    "IsolationRefusedError",
    "IssuedKey",
    "Link",
    "MalformedRequestError",
    "MemvaultError",
    "MethodNotAllowedError",
    "NotFoundError",
    "Note",
    "Page",
    "PermissionDeniedError",
    "PiiRefusedError",
    "Policy",
    "QualityFlag",
    "RateLimitedError",
    "ScopeBusyError",
    "ScopeErasingError",
    "ScreenRefusedError",
    "SearchHit",
    "ServerError",
    "SessionUntrustedError",
    "SuspiciousSharedError",
    "TooShortError",
    "TransportError",
    "TtlDefaults",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "VerificationError",
]
