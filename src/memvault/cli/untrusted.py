"""`memvault untrusted SESSION_ID`: the runtime's control for untrusted-content mode.

An agent runtime that just fed its model external content (a web page, an email) runs this
with the agent's key (`MEMVAULT_API_KEY`) before the model's next turn; `memvault mcp` started
with the same `MEMVAULT_SESSION_ID` then answers every memory read `session_untrusted`. It is a
command of the runtime, not an MCP tool: the model can neither call it nor undo it. The mark
lives on the server, so every worker and every MCP process sees it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memvault.cli.options import ServerUrl, agent_key_from_env, server_url
from memvault.scope import is_valid_id


def add_untrusted_command(app: typer.Typer) -> None:
    """Register `memvault untrusted` on the root app."""

    @app.command("untrusted")
    def untrusted(
        session_id: Annotated[str, typer.Argument(help="The session to mark (id grammar)")],
        reason: Annotated[
            str, typer.Option(help="Why (screened; never stored)")
        ] = "processed external content",
        ttl: Annotated[int, typer.Option(help="Seconds the mark lasts (at most 86400)")] = 300,
        end: Annotated[bool, typer.Option("--end", help="End the mark instead")] = False,
        url: ServerUrl = None,
    ) -> None:
        """Mark a session of MEMVAULT_API_KEY's agent untrusted (or end the mark with --end)."""
        from memvault.client import Client, MemvaultError

        api_key = agent_key_from_env()
        if not api_key:
            typer.echo("error: MEMVAULT_API_KEY is not set (an agent key)", err=True)
            raise typer.Exit(1)
        if not is_valid_id(session_id):
            typer.echo("error: SESSION_ID must match the id grammar", err=True)
            raise typer.Exit(1)
        base_url = server_url(url)
        try:
            with Client(base_url, api_key) as client:
                if end:
                    client.unmark_untrusted(session_id)
                    typer.echo(f"session {session_id}: mark ended")
                else:
                    client.mark_untrusted(session_id, reason=reason, ttl_s=ttl)
                    typer.echo(f"session {session_id}: untrusted for {ttl} s")
        except MemvaultError as exc:
            typer.echo(f"error: {getattr(exc, 'code', '') or type(exc).__name__}", err=True)
            raise typer.Exit(1) from None
