"""RSS of the benchmark's own process, split by what is mapped (`/proc/self/smaps`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def rss_mib() -> float:
    """This process's resident set now, in MiB (`/proc/self/statm`)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def smaps_mib(data_dir: Path, data_name: Callable[[str], str] | None = None) -> dict[str, float]:
    """This process's RSS split by mapping: anonymous, data-dir files, libraries, other files.

    Data-dir files are named `data:` + their top folder under `data_dir`, or `data:` +
    `data_name(path relative to data_dir)` when given.
    """
    out: dict[str, float] = {}
    name = "anon"
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return out
    root = str(data_dir.resolve())
    for line in lines:
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping header
            path = head[5] if len(head) == 6 else ""
            if path.startswith(root):
                rel = path[len(root) :].lstrip("/")
                name = "data:" + (data_name(rel) if data_name else rel.split("/")[0])
            elif path.endswith(".so") or ".so." in path or ".cpython-" in path:
                name = "libs"
            elif path.startswith("/") and not path.startswith("/dev/"):
                name = "other files"
            else:
                name = "anon"  # [heap], [stack], anonymous (numpy, Python, Rust allocations)
        elif line.startswith("Rss:"):
            out[name] = out.get(name, 0.0) + int(line.split()[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}
