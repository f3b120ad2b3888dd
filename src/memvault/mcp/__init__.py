"""`memvault mcp`: an MCP server over one bound memory scope (official `mcp` SDK).

`build_server(backend)` makes the server; `EmbeddedBackend` (a local data directory) and
`RemoteBackend` (a memvault server through `memvault.client`) are the backends, each bound to the
scope of one agent key when it is built. See docs/mcp.md.
"""

from memvault.mcp.backends import BackendError, EmbeddedBackend, MemoryBackend, RemoteBackend
from memvault.mcp.envelope import MemoryEnvelope, RecalledMemory, UnavailableResult
from memvault.mcp.server import TOOL_NAMES, build_server

__all__ = [
    "TOOL_NAMES",
    "BackendError",
    "EmbeddedBackend",
    "MemoryBackend",
    "MemoryEnvelope",
    "RecalledMemory",
    "RemoteBackend",
    "UnavailableResult",
    "build_server",
]
