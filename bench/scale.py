"""Scale on one machine (issue 35): big users, many users, erasure beside live traffic, and the
cost of the PostgreSQL keystore scrub.

Run: .venv/bin/python -m bench.scale --scenario big|many|erase|scrub|all [--database-url URL]

Each scenario lives in its own module and is imported only when chosen: `big`
(`bench._scale_big`: one user at 100k notes, HNSW), `many` (`bench._scale_many`: 1,000 users
in a tenant, LRU, maintenance, startup) and `erase` (`bench._scale_erase`: another user's search
p95 before and during a 10k-note erase) and `scrub` (`bench._scale_scrub`: what the keystore
scrub costs an erase, PostgreSQL only). Each module exposes `add_arguments(parser)` and
`run(args) -> dict`. Without `--database-url` the embedded default (SQLite + Edge) runs; with a
PostgreSQL superuser URL the scenario runs on a schema it creates and drops. Results are printed
and written to `bench/out/scale-<scenario>-<backend>.json` (`--out` to choose).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from types import ModuleType
from typing import Any

from bench._harness import arg_parser, write_json

SCENARIOS = {
    "big": "bench._scale_big",
    "many": "bench._scale_many",
    "erase": "bench._scale_erase",
    "scrub": "bench._scale_scrub",
}


def _module(name: str) -> ModuleType | None:
    """The scenario's module, or None when it is not in this checkout."""
    try:
        return importlib.import_module(SCENARIOS[name])
    except ModuleNotFoundError as exc:
        if exc.name != SCENARIOS[name]:
            raise
        return None


def parser_for(names: list[str]) -> argparse.ArgumentParser:
    """The CLI's parser, with the options of every scenario module present."""
    parser = arg_parser(__doc__)
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL superuser URL")
    parser.add_argument("--out", default=None, help="JSON file (default: bench/out/scale-...)")
    for name in names:
        module = _module(name)
        if module is not None:
            module.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = parser_for(list(SCENARIOS))
    args = parser.parse_args(argv)
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    backend = "postgresql" if args.database_url else "sqlite"
    results: dict[str, Any] = {}
    for name in names:
        module = _module(name)
        if module is None:
            if args.scenario != "all":
                parser.error(f"scenario {name!r} is not in this checkout ({SCENARIOS[name]})")
            continue
        results[name] = module.run(args)
    out = args.out or f"scale-{args.scenario}-{backend}.json"
    path = write_json(out, {"backend": backend, "scenarios": results})
    print(json.dumps(results, indent=2))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
