"""`memvault mcp`: an MCP server over one bound memory scope (official `mcp` SDK).

`build_server(backend)` makes the server; `EmbeddedBackend` (a local data directory) and
`RemoteBackend` (a memvault server through `memvault.client`) are the backends, each bound to the
scope of one agent key when it is built. See docs/mcp.md.
"""

from memvault.mcp.backends import (
    AmemOff,
    BackendError,
    EmbeddedBackend,
    MemoryBackend,
    RemoteBackend,
)
from memvault.mcp.envelope import (
    ConsolidateResult,
    MaintenanceResult,
    MemoryEnvelope,
    QualityScanResult,
    RecalledMemory,
)
from memvault.mcp.server import TOOL_NAMES, build_server

__all__ = [
    "TOOL_NAMES",
    "AmemOff",
    "BackendError",
    "ConsolidateResult",
    "EmbeddedBackend",
    "MaintenanceResult",
    "MemoryBackend",
    "MemoryEnvelope",
    "QualityScanResult",
    "RecalledMemory",
    "RemoteBackend",
    "build_server",
]
