"""Searching every file under a data directory for byte strings, fast and exactly.

The at-rest tests search every file under a data dir (Edge shards map tens of MiB each, mostly
zeros) for hundreds of needles: a plain `needle in data` per needle read ~30 GB per scan. Here
each file is searched only where it is not zero: the 4 KiB pages holding any non-zero byte,
joined into runs and widened on both sides by the longest needle. An occurrence of a needle
that is not all zeros holds a non-zero byte, so it lies inside such a widened run: the result
is exactly that of the plain search (`test_disk_scan` checks it against it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

PAGE = 4096


def searched_spans(data: bytes, margin: int) -> Iterator[tuple[int, int]]:
    """The (start, end) ranges of `data` that can hold a needle of at most `margin` bytes
    that is not all zeros."""
    pages = len(data) // PAGE
    if pages < 4:
        yield 0, len(data)
        return
    words = np.frombuffer(data, dtype=np.uint64, count=pages * PAGE // 8)
    live = words.reshape(pages, PAGE // 8).any(axis=1)
    live = np.append(live, True)  # the tail after the last whole page is always searched
    edges = np.flatnonzero(np.diff(np.concatenate(([0], live.astype(np.int8), [0]))))
    start: int | None = None
    end = 0
    for first, stop in zip(edges[::2], edges[1::2], strict=True):
        lo = max(0, int(first) * PAGE - margin)
        hi = min(len(data), int(stop) * PAGE + margin)
        if start is not None and lo <= end:
            end = max(end, hi)
            continue
        if start is not None:
            yield start, end
        start, end = lo, hi
    if start is not None:
        yield start, end


def occurrences(data: bytes, needles: Sequence[bytes]) -> list[int]:
    """The indexes of the needles found in `data`."""
    if any(not n.strip(b"\0") for n in needles):
        return [i for i, n in enumerate(needles) if n in data]  # all-zero needle: plain search
    margin = max((len(n) for n in needles), default=0)
    found: set[int] = set()
    for lo, hi in searched_spans(data, margin):
        chunk = data[lo:hi]
        found.update(i for i, n in enumerate(needles) if i not in found and n in chunk)
    return sorted(found)


def files_holding(root: Path, needles: Sequence[bytes]) -> list[tuple[Path, int]]:
    """(file, needle index) for every needle found in every file under `root`."""
    return [
        (path, i)
        for path in sorted(root.rglob("*"))
        if path.is_file()
        for i in occurrences(path.read_bytes(), needles)
    ]
