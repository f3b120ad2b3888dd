"""`python -m memvault.cli`: the same commands as the `memvault` script."""

from memvault.cli import app

if __name__ == "__main__":  # pragma: no cover
    app()
