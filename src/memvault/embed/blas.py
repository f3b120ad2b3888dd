"""A process-wide cap on BLAS threads, for long-running services that embed."""

from __future__ import annotations

from typing import Any


def cap_blas_threads(threads: int) -> Any:
    """Cap BLAS at `threads` for the whole process until `restore_original_limits()` is called
    on the returned limiter (keep it for the service's lifetime).

    The embedder caps BLAS only during its own forward pass and restores the library default
    (one thread per core) afterwards. In a long-running service, OpenBLAS's extra worker then
    spins between calls: under 8 add-only HTTP clients it burned 0.7 of the 2 cores for no work
    (server CPU 11.6 -> 7.9 ms per add with the cap; `bench.load --mix add=1`). With the cap
    process-wide, the embedder's own limit restores to it instead. `memvault serve` and
    `memvault mcp --embedded` hold one.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="blas")
