"""What the hardening of issue 7 costs on the write path, as ratios measured in one run.

- every stored field screened: an add with `source` and two topics vs the same add with text only;
- the staged update protocol: an update (stage, upsert, swap) vs an add;
- `Idempotency-Key`: a POST over the real app with a fresh key vs the same POST without one.

Each pair is interleaved (A, B, A, B, ...) on one vault so load on the machine hits both alike;
the figure that matters is the ratio of medians.

Run: .venv/bin/python -m bench.hardening [--rounds 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from memvault.api.app import create_app
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope

OPERATOR_KEY = "mvop_bench-hardening-0123456789"
WORDS = ("river", "lamp", "garden", "piano", "winter", "orange", "ticket", "violet", "harbor")


def letters(i: int) -> str:
    """`i` written in base 26 with letters: a distinct tag without digits."""
    out = ""
    while True:
        i, r = divmod(i, 26)
        out = chr(97 + r) + out
        if i == 0:
            return out


def sentence(i: int) -> str:
    """A distinct, PII-free sentence (no digit runs the phone detector would redact)."""
    picks = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(5)]
    return f"Note about the {' '.join(picks)} plan, item {letters(i)}"


def timed(fn: Callable[[int], Any], i: int) -> float:
    start = time.perf_counter()
    fn(i)
    return (time.perf_counter() - start) * 1000


def summary(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
    }


def pair(rounds: int, a: Callable[[int], Any], b: Callable[[int], Any]) -> dict[str, Any]:
    """Interleave `a` and `b`; report both and the ratio of their medians."""
    first: list[float] = []
    second: list[float] = []
    for i in range(rounds):
        first.append(timed(a, i))
        second.append(timed(b, i))
    sa, sb = summary(first), summary(second)
    return {"a": sa, "b": sb, "ratio_p50": round(sa["p50_ms"] / sb["p50_ms"], 3)}


def run(rounds: int, root: Path) -> dict[str, Any]:
    embedder = make_embedder("use-m3", data_dir=root)
    services: Services = open_services(Settings(data_dir=root / "data"), embedder=embedder)
    try:
        services.tenants.create("bench")
        view = services.vault.scoped(Scope("bench", "u1", "a1"))
        view.add("warm up the write path once before timing it")
        counter = iter(range(10**9))
        results: dict[str, Any] = {"rounds": rounds}
        results["fields_screened"] = pair(
            rounds,
            lambda i: view.add(
                sentence(next(counter)), source="chat with the planner", topics=["plans", "home"]
            ),
            lambda i: view.add(sentence(next(counter))),
        )
        targets = [view.add(sentence(next(counter))).id for _ in range(rounds)]
        results["update_vs_add"] = pair(
            rounds,
            lambda i: view.update(targets[i], text=sentence(next(counter))),
            lambda i: view.add(sentence(next(counter))),
        )
        with TestClient(create_app(services, operator_key=OPERATOR_KEY)) as client:
            admin = client.post(
                "/v1/operator/tenants",
                json={"tenant_id": "http"},
                headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
            ).json()["api_key"]
            key = client.post(
                "/v1/admin/keys",
                json={"user_id": "u1", "agent_id": "a1"},
                headers={"Authorization": f"Bearer {admin}"},
            ).json()["api_key"]
            auth = {"Authorization": f"Bearer {key}"}

            def post(with_key: bool) -> None:
                headers = dict(auth, **({"Idempotency-Key": uuid.uuid4().hex} if with_key else {}))
                r = client.post(
                    "/v1/memories", json={"text": sentence(next(counter))}, headers=headers
                )
                assert r.status_code == 201, r.status_code

            results["idempotency_key_http"] = pair(
                rounds, lambda i: post(True), lambda i: post(False)
            )
        return results
    finally:
        services.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("bench/out/hardening.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        results = run(args.rounds, Path(tmp))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    for name in ("fields_screened", "update_vs_add", "idempotency_key_http"):
        r = results[name]
        print(
            f"{name:22s} a p50 {r['a']['p50_ms']:7.2f} ms  b p50 {r['b']['p50_ms']:7.2f} ms  "
            f"ratio {r['ratio_p50']:.2f}"
        )


if __name__ == "__main__":
    main()
