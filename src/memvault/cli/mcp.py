"""`memvault mcp`: serve the memory tools to an MCP host, over stdio or streamable HTTP.

The scope comes from `MEMVAULT_API_KEY` (an agent key), read once at start and never from a tool
call. Remote by default (a memvault server at `MEMVAULT_URL`, through the SDK), or `--embedded`
on a local data directory (which it then locks, like `memvault serve`). Registered by
`memvault.cli` (`add_mcp_command`), which passes its helpers in, so this module never imports
`memvault.cli`.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memvault.cli.options import ServerUrl, agent_key_from_env, server_url
from memvault.scope import is_valid_id

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from memvault.cli.options import CliHelpers
    from memvault.config import Settings
    from memvault.mcp.backends import MemoryBackend
    from memvault.runtime.factory import Services
    from memvault.store.datadir import DataDirLock

DEFAULT_HTTP_PORT = 8701

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


def _say(message: str) -> None:
    """Progress goes to stderr: on stdio, stdout carries the protocol only."""
    typer.echo(f"memvault mcp: {message}", err=True)


class BearerGate:
    """ASGI wrapper for `--http`: every HTTP request must carry `Authorization: Bearer <the
    server's own MEMVAULT_API_KEY>` (compared in constant time), so another local process cannot
    borrow the bound scope by reaching the port. Lifespan events pass through."""

    def __init__(self, app: Asgi, api_key: str) -> None:
        self._app = app
        self._expected = api_key.encode()

    def admits(self, header: bytes) -> bool:
        """Whether an `Authorization` header value presents the server's key: the scheme is
        matched case-insensitively (RFC 7235), the key in constant time."""
        scheme, _, token = header.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            presented = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not self.admits(presented):
                body = b'{"error": {"code": "unauthorized", "message": "bearer key required"}}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


def open_backend(
    api_key: str,
    *,
    embedded: bool,
    url: str,
    settings: Settings,
    lock_data_dir: Callable[[Settings], DataDirLock | None],
    open_services: Callable[[Settings, DataDirLock | None], Services],
    session_id: str | None = None,
) -> MemoryBackend:
    """The backend bound to `api_key`'s scope. Exits with one line if the key cannot bind."""
    from memvault.mcp.backends import EmbeddedBackend, RemoteBackend, bind_failure

    if not embedded:
        try:
            return RemoteBackend.connect(url, api_key, session_id=session_id)
        except Exception as exc:
            _fail(bind_failure(exc))
    lock = lock_data_dir(settings)
    _say("loading the embedding model ...")
    with contextlib.redirect_stdout(sys.stderr):
        services = open_services(settings, lock)
    from memvault.embed.blas import cap_blas_threads

    services.on_close.append(cap_blas_threads(settings.embed_threads).restore_original_limits)
    try:
        backend = EmbeddedBackend.authenticate(services, api_key)
        from memvault.compliance.wiring import install as install_compliance

        compliance = install_compliance(services)
        services.start()
        compliance.resume()
    except Exception as exc:
        services.close()
        _fail(bind_failure(exc))
    return backend


def _fail(message: str) -> Any:
    typer.echo("error: " + message, err=True)
    raise typer.Exit(1)


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def transport_security(
    host: str, allowed_hosts: list[str], allowed_origins: list[str]
) -> TransportSecuritySettings:
    """The MCP SDK's Host/Origin checks (DNS-rebinding protection) for `--http`, always on.

    On a loopback interface the loopback Hosts and Origins (any port) are allowed, as the SDK
    does by itself, plus `allowed_hosts` / `allowed_origins` (e.g. a TLS proxy's public
    `mcp.example.com` and `https://mcp.example.com`; `name:*` allows any port). On any other
    interface (`0.0.0.0` included) only what is listed is allowed, and at least one Host must
    be listed: the SDK alone would check nothing there.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    hosts, origins = list(allowed_hosts), list(allowed_origins)
    if host in LOOPBACK_HOSTS:
        hosts += ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    elif not hosts:
        raise ValueError(
            f"--host {host} is not loopback: name the Host headers to accept with --allowed-host"
        )
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins)),
    )


def serve_http(
    server: Any,
    api_key: str,
    host: str,
    port: int,
    security: TransportSecuritySettings,
) -> None:
    """Streamable HTTP at `http://host:port/mcp`, behind the bearer gate and the Host and
    Origin checks of `security`."""
    import uvicorn

    app = BearerGate(server.streamable_http_app(host=host, transport_security=security), api_key)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def add_mcp_command(
    app: typer.Typer,
    helpers: CliHelpers,
) -> None:
    """Register `memvault mcp` on the root app."""

    @app.command("mcp")
    @helpers.command
    def mcp(
        http: Annotated[
            bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio")
        ] = False,
        host: Annotated[str, typer.Option(help="With --http: interface to bind")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="With --http: port")] = DEFAULT_HTTP_PORT,
        allowed_host: Annotated[
            list[str] | None,
            typer.Option(
                "--allowed-host",
                help="With --http: a Host header to accept besides loopback's (repeatable; "
                "`name:*` for any port). Needed when --host is not loopback.",
            ),
        ] = None,
        allowed_origin: Annotated[
            list[str] | None,
            typer.Option(
                "--allowed-origin",
                help="With --http: an Origin to accept besides loopback's (repeatable), "
                "e.g. https://mcp.example.com",
            ),
        ] = None,
        embedded: Annotated[
            bool,
            typer.Option("--embedded", help="Open a local data directory instead of a server"),
        ] = False,
        data_dir: Annotated[
            Path | None,
            typer.Option(
                "--data-dir", help="With --embedded: data directory (default: MEMVAULT_DATA_DIR)"
            ),
        ] = None,
        url: ServerUrl = None,
    ) -> None:
        """Serve the memory tools over MCP for the scope of MEMVAULT_API_KEY (an agent key)."""
        api_key = agent_key_from_env()
        if not api_key:
            _fail("MEMVAULT_API_KEY is not set (memvault mcp needs an agent key)")
        base_url = server_url(url)
        session_id = os.environ.get("MEMVAULT_SESSION_ID", "").strip() or None
        if session_id is not None:
            if embedded:
                _fail("MEMVAULT_SESSION_ID needs a memvault server (untrusted marks live there)")
            if not is_valid_id(session_id):
                _fail("MEMVAULT_SESSION_ID must match the id grammar")
        security = None
        if http:
            try:
                security = transport_security(host, allowed_host or [], allowed_origin or [])
            except ValueError as exc:
                _fail(str(exc))
        backend = open_backend(
            api_key,
            embedded=embedded,
            url=base_url,
            settings=helpers.settings_for(data_dir),
            lock_data_dir=helpers.lock_data_dir,
            open_services=helpers.open_services,
            session_id=session_id,
        )
        from memvault.mcp.server import build_server

        try:
            server = build_server(backend)
            where = f"http://{host}:{port}/mcp" if http else "stdio"
            _say(f"serving {backend.name} memory on {where}")
            if security is not None:
                serve_http(server, api_key, host, port, security)
            else:
                server.run("stdio")
        finally:
            backend.close()
