"""The `memvault` console script: the command line, or a clear word when it cannot run.

The base install is the client SDK alone (httpx, pydantic, cryptography). Every command needs
the server's packages (typer, SQLAlchemy, Qdrant, ...), the `server` extra: without them the
script says how to install them instead of ending in a traceback.
"""

from __future__ import annotations

import sys

HINT = "pip install 'memvault[server]'"


def main() -> None:
    """Run `memvault.cli:app`; exit 1 with the install hint when the server extra is missing."""
    try:
        from memvault.cli import app
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] == "memvault":
            raise  # a broken checkout, not a missing extra
        print(
            f"memvault: the command line needs the server packages ({exc.name} is not "
            f"installed); this is the client-only install. Install them with: {HINT}",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    app()
