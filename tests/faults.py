"""Fault injection for crash-repair tests: raise at one named step of a write."""

from __future__ import annotations

from collections.abc import Callable


class Crash(Exception):
    """Stands for a process dying at a write step."""


def crash_at(step: str) -> Callable[[str], None]:
    """A `Vault.fault` hook that raises `Crash` when the write reaches `step`."""

    def fault(current: str) -> None:
        if current == step:
            raise Crash(step)

    return fault
