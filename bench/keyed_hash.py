"""What a keyed token hash costs a search, alone and with busy threads: `hmac.digest` vs `HmacKey`.

Every token of a query or a note is turned into its sparse id by HMAC-SHA256 under the tenant's
index key (`IndexKey.token_id`). `hmac.digest` releases the GIL on each call, so in a busy
server each of those calls can wait for other threads to hand the GIL back; `HmacKey.digest`
finishes the MAC from precomputed pad states and keeps the GIL for short messages.

`.venv/bin/python -m bench.keyed_hash [--busy 0,1,4] [--searches 2000] [--tokens 10] [--rounds 3]`

For each number of busy threads (pure-Python loops standing in for other requests' work), it
times "searches" of `--tokens` MACs each, alternating the two implementations round by round,
and prints the mean µs per MAC and the p50/p99/max ms per search (the waits are rare and long, so
the mean shows them and the p99 may not).
"""

from __future__ import annotations

import argparse
import hmac
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memvault.keyring._primitives import HmacKey

KEY = bytes(range(32))


@contextmanager
def busy_threads(count: int) -> Iterator[None]:
    """`count` threads spinning in Python until the block ends."""
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            for _ in range(1000):
                x += 1

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()


def time_searches(mac: Callable[[bytes], bytes], searches: int, tokens: int) -> list[float]:
    """Seconds per search of `tokens` MACs, for `searches` searches."""
    words = [f"token{i}".encode() for i in range(tokens)]
    out = []
    for _ in range(searches):
        start = time.perf_counter()
        for w in words:
            mac(w)
        out.append(time.perf_counter() - start)
    return out


def implementations() -> dict[str, Callable[[bytes], bytes]]:
    key = HmacKey(KEY)
    return {
        "hmac.digest": lambda m: hmac.digest(KEY, m, "sha256"),
        "HmacKey": key.digest,
    }


def measure(busy: int, searches: int, tokens: int, rounds: int) -> dict[str, list[float]]:
    """Per-search seconds of each implementation with `busy` spinning threads, pooled."""
    found: dict[str, list[float]] = {name: [] for name in implementations()}
    with busy_threads(busy):
        time.sleep(0.05)
        for _ in range(rounds):
            for name, mac in implementations().items():
                found[name].extend(time_searches(mac, searches, tokens))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", default="0,1,4", help="busy thread counts, comma-separated")
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    heads = ("µs/MAC", "p50 ms", "p99 ms", "max ms")
    print(f"{'busy':>4} {'implementation':<12} " + " ".join(f"{h:>8}" for h in heads))
    for busy in (int(b) for b in args.busy.split(",")):
        for name, times in measure(busy, args.searches, args.tokens, args.rounds).items():
            times.sort()
            per_mac = statistics.fmean(times) / args.tokens * 1e6
            p50 = times[len(times) // 2] * 1e3
            p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1e3
            cells = (f"{per_mac:>8.2f}", f"{p50:>8.3f}", f"{p99:>8.3f}", f"{times[-1] * 1e3:>8.3f}")
            print(f"{busy:>4} {name:<12} " + " ".join(cells))


if __name__ == "__main__":
    main()
