"""Small test doubles shared across test folders."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy import create_engine, text

from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.service import ScopedVault

T1_SCOPE = Scope("t1", "u1", "a1")


class FakeClock:
    """A clock moved by hand: call it for the time, set or add to `now` to move it."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now


def run_threads(
    target: Callable[[int], object], count: int, timeout: float | None = None
) -> list[BaseException]:
    """Run `target(0)` … `target(count - 1)`, each in its own thread, and wait for them all.

    Returns what the threads raised (an assertion failed in a thread is one of them), and a
    `TimeoutError` for each thread still running after `timeout` seconds, so that the caller's
    `assert not errors` surfaces both in the test's own thread."""
    errors: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            target(n)
        except BaseException as exc:  # surfaced to the caller
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    errors.extend(TimeoutError(thread.name) for thread in threads if thread.is_alive())
    return errors


def run_sql(url: str, *statements: str, schema: str | None = None) -> None:
    """Run `statements` in one transaction on a new engine for `url` (with `search_path` set to
    `schema` when given), then dispose of the engine."""
    args = {"options": f"-csearch_path={schema}"} if schema else {}
    engine = create_engine(url, connect_args=args)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def tenant_vault(
    make_services: Callable[..., Services], backend: str = "sqlite", scope: Scope = T1_SCOPE
) -> tuple[Services, ScopedVault]:
    """New services on `backend` with the tenant of `scope` created, and the vault of `scope`."""
    services = make_services(backend)
    services.tenants.create(scope.tenant)
    return services, services.vault.scoped(scope)


def poll_until(check: Callable[[], object], seconds: float, step: float = 0.05) -> bool:
    """Whether `check()` came true within `seconds` (asked every `step` seconds)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return False
