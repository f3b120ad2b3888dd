"""HTTP load on loopback: N concurrent clients against a real `memvault serve`, mixed workload.

Starts `memvault serve` on 127.0.0.1 with a fresh data directory, creates one tenant with one
agent key per client (each client is its own user, as hosted agents are), seeds each user with a
few notes, then runs every client for a fixed duration with a mixed add / search / get / list
workload. Requests are bounded in time and count, only loopback is addressed, and the server is
stopped at the end. Prints throughput, p50/p95/p99 per operation and the errors.

Run: .venv/bin/python -m bench.load [--clients 8] [--seconds 20] [--mix add=3,search=4,get=2,list=1]
     [--amem on|off]  (A-MEM in the server: on is the service default)
     [--queries repeat|distinct]  (repeat: four words of one of the client's notes, so a
     client asks few distinct queries and most hit the query-embedding cache; distinct: four
     words drawn from all its notes, so nearly every search embeds its query)
     [--set NAME=VALUE ...]  (server settings, as MEMVAULT_<NAME>)

A/B in one session: `--src DIR` serves from another source tree (e.g. a copy of `src/` taken
before a change) with this venv's packages, so the two can be run alternately on one machine.
"""

from __future__ import annotations

import bisect
import http.client
import json
import os
import random
import resource
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench._harness import arg_parser, percentile, write_json

OPERATOR_KEY = "mvop_bench-load-0123456789abcdef"
MAX_REQUESTS_PER_CLIENT = 100_000
WORDS = ("garden", "piano", "harbor", "ticket", "violet", "winter", "candle", "meadow", "orange")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sentence(rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(6))
    tag = "".join(rng.choice(string.ascii_lowercase) for _ in range(8))  # no digit runs (PII)
    return f"The {words} plan, item {tag}, is due next week"


def parse_mix(spec: str) -> dict[str, int]:
    mix = {}
    for part in spec.split(","):
        name, _, weight = part.partition("=")
        if name not in ("add", "search", "get", "list") or not weight.isdigit():
            raise SystemExit(f"bad --mix entry: {part!r}")
        mix[name] = int(weight)
    return mix


class Server:
    """`memvault serve` in its own process group, on a fresh data directory."""

    def __init__(
        self,
        data: Path,
        src: Path | None = None,
        amem: bool = True,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
        env["MEMVAULT_OPERATOR_KEY"] = OPERATOR_KEY
        env["MEMVAULT_AMEM"] = "on" if amem else "off"
        env.update({f"MEMVAULT_{k.upper()}": v for k, v in (settings or {}).items()})
        if src is not None:
            env["PYTHONPATH"] = str(src.resolve())
        argv = ["serve", "--port", str(self.port), "--data-dir", str(data)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memvault.cli", *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("memvault serve exited")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise SystemExit("memvault serve did not become ready")

    def cpu_seconds(self) -> float:
        """User + system CPU the server has used: every process of its session, so the
        embedding process (`EMBED_PROCESS`) counts too (Linux /proc; 0 elsewhere)."""
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            if int(fields[3]) == self.proc.pid:  # session id: the server leads its session
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)


BATCH_METRICS = {
    "adds_per_group_commit": "memvault_group_commit_batch_size",
    "queries_per_embedding_call": "memvault_query_embedding_batch_size",
    "audit_events_per_transaction": "memvault_audit_batch_size",
}


def batch_totals(base: str) -> dict[str, tuple[float, float]]:
    """(count, sum) of the server's batch-size histograms, from `/metrics` (empty if absent)."""
    try:
        text = httpx.get(
            f"{base}/metrics", headers={"Authorization": f"Bearer {OPERATOR_KEY}"}, timeout=10
        ).text
    except httpx.HTTPError:
        return {}
    totals: dict[str, tuple[float, float]] = {}
    for label, metric in BATCH_METRICS.items():
        count = total = None
        for line in text.splitlines():
            if line.startswith(f"{metric}_count "):
                count = float(line.split()[-1])
            elif line.startswith(f"{metric}_sum "):
                total = float(line.split()[-1])
        if count is not None and total is not None:
            totals[label] = (count, total)
    return totals


class Connection:
    """One client's keep-alive HTTP/1.1 connection (stdlib `http.client`).

    The load generator shares the machine with the server, so its own CPU per request is
    taken from the server: `http.client` costs a fraction of httpx's per request (the
    report gives the client's CPU per request too). A request that fails is not retried
    (an add must not be sent twice); the connection is reopened for the next one.
    """

    def __init__(self, base: str, key: str, timeout: float = 30.0) -> None:
        host, _, port = base.removeprefix("http://").partition(":")
        self._address = (host, int(port))
        self._auth = f"Bearer {key}"
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """(status, parsed JSON body or None)."""
        headers = {"Authorization": self._auth}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self._conn is None:
            self._conn = http.client.HTTPConnection(*self._address, timeout=self._timeout)
        try:
            self._conn.request(method, path, body=data, headers=headers)
            response = self._conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if response.will_close:
            self.close()
        kind = response.getheader("content-type") or ""
        return response.status, json.loads(raw) if raw and "json" in kind else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def setup_keys(base: str, clients: int) -> list[str]:
    op = {"Authorization": f"Bearer {OPERATOR_KEY}"}
    r = httpx.post(f"{base}/v1/operator/tenants", json={"tenant_id": "load"}, headers=op)
    r.raise_for_status()
    admin = {"Authorization": f"Bearer {r.json()['api_key']}"}
    keys = []
    for i in range(clients):
        body = {"user_id": f"user{i}", "agent_id": "agent"}
        r = httpx.post(f"{base}/v1/admin/keys", json=body, headers=admin)
        r.raise_for_status()
        keys.append(str(r.json()["api_key"]))
    return keys


class Written:
    """A client's notes as it wrote them: ids to get, texts to search for, and the distinct
    words of those texts, kept sorted as each note arrives (a `--queries distinct` search
    samples them without rebuilding the set from every text)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.words: list[str] = []

    def add(self, body: dict[str, Any]) -> None:
        """Record an added note's answer (A-MEM never moves a note's text: its id stays)."""
        self.ids.append(str(body["id"]))
        self.texts.append(body["text"])
        for word in body["text"].split():
            at = bisect.bisect_left(self.words, word)
            if at == len(self.words) or self.words[at] != word:
                self.words.insert(at, word)


def client_loop(
    base: str,
    key: str,
    seed: int,
    mix: dict[str, int],
    start: threading.Barrier,
    clock: dict[str, float],
    samples: dict[str, list[float]],
    errors: Counter[str],
    lock: threading.Lock,
    distinct: bool = False,
) -> None:
    """One client: seed five notes, then run the mix until the window closes."""
    rng = random.Random(seed)
    ops = [name for name, weight in mix.items() for _ in range(weight)]
    notes = Written()
    http = Connection(base, key)
    try:
        for _ in range(5):  # seed: something to search, get and list
            status, body = http.call("POST", "/v1/memories", {"text": sentence(rng)})
            if status == 201:
                notes.add(body)
    except (OSError, http.client.HTTPException):
        pass
    finally:
        start.wait(timeout=600)  # the measured window opens once every client has seeded
    if not notes.ids:
        with lock:
            errors["seed"] += 1
        return
    until = clock["until"]
    for _ in range(MAX_REQUESTS_PER_CLIENT):
        if time.monotonic() >= until:
            break
        op = rng.choice(ops)
        began = time.perf_counter()
        try:
            if op == "add":
                status, body = http.call("POST", "/v1/memories", {"text": sentence(rng)})
                if status == 201:
                    notes.add(body)
            elif op == "search":
                if distinct:
                    query = " ".join(rng.sample(notes.words, min(4, len(notes.words))))
                else:
                    query = " ".join(rng.choice(notes.texts).split()[1:5])
                status, _ = http.call("POST", "/v1/memories/search", {"query": query})
            elif op == "get":
                note_id = rng.choice(notes.ids)
                status, body = http.call("GET", f"/v1/memories/{note_id}")
            else:
                status, _ = http.call("GET", "/v1/memories?limit=20")
        except (OSError, http.client.HTTPException) as exc:
            status = -1
            with lock:
                errors[f"{op}:{type(exc).__name__}"] += 1
        elapsed = (time.perf_counter() - began) * 1000
        with lock:
            if status in (200, 201):
                samples[op].append(elapsed)
            elif status != -1:
                errors[f"{op}:{status}"] += 1
    http.close()


def client_cpu_seconds() -> float:
    """User + system CPU of this process (every client thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(
    clients: int,
    seconds: float,
    mix: dict[str, int],
    src: Path | None = None,
    amem: bool = True,
    settings: dict[str, str] | None = None,
    distinct: bool = False,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "data", src, amem, settings)
        try:
            keys = setup_keys(server.base, clients)
            samples: dict[str, list[float]] = defaultdict(list)
            errors: Counter[str] = Counter()
            lock = threading.Lock()
            clock: dict[str, float] = {}
            batches: dict[str, dict[str, tuple[float, float]]] = {}

            def open_window() -> None:
                clock["started"] = time.monotonic()
                clock["until"] = clock["started"] + seconds
                clock["cpu"] = server.cpu_seconds()
                clock["client_cpu"] = client_cpu_seconds()
                batches["before"] = batch_totals(server.base)

            start = threading.Barrier(clients, action=open_window)
            threads = [
                threading.Thread(
                    target=client_loop,
                    args=(server.base, keys[i], i, mix, start, clock, samples, errors, lock),
                    kwargs={"distinct": distinct},
                    daemon=True,
                )
                for i in range(clients)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=seconds + 300)
            wall = time.monotonic() - clock["started"]
            server_cpu = server.cpu_seconds() - clock["cpu"]
            client_cpu = client_cpu_seconds() - clock["client_cpu"]
            batches["after"] = batch_totals(server.base)
        finally:
            server.stop()
    report: dict[str, Any] = {"clients": clients, "seconds": round(wall, 1), "mix": mix, "ops": {}}
    for op, values in sorted(samples.items()):
        ordered = sorted(values)
        report["ops"][op] = {
            "count": len(ordered),
            "per_s": round(len(ordered) / wall, 1),
            "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(percentile(ordered, 95), 1),
            "p99_ms": round(percentile(ordered, 99), 1),
        }
    report["errors"] = dict(errors)
    done = sum(len(v) for v in samples.values())
    report["total_per_s"] = round(done / wall, 1)
    # Server CPU per request: steadier than throughput on a shared machine, where other
    # processes take cores away from the server.
    report["server_cpu_ms_per_request"] = round(server_cpu * 1000 / max(done, 1), 2)
    report["server_cpu_share"] = round(server_cpu / wall, 2)
    report["client_cpu_ms_per_request"] = round(client_cpu * 1000 / max(done, 1), 2)
    # Mean batch sizes in the window: adds per group commit, queries per embedding model call.
    report["batching"] = {}
    for label, (count, total) in batches.get("after", {}).items():
        count0, total0 = batches.get("before", {}).get(label, (0.0, 0.0))
        if count > count0:
            report["batching"][label] = round((total - total0) / (count - count0), 2)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--mix", default="add=3,search=4,get=2,list=1")
    parser.add_argument("--out", type=Path, default=Path("bench/out/load.json"))
    parser.add_argument("--src", type=Path, help="serve from this source tree (A/B runs)")
    parser.add_argument(
        "--amem",
        choices=("on", "off"),
        default="on",
        help="A-MEM in the server (on: the service default; off: raw storage, as mem0 infer=False)",
    )
    parser.add_argument(
        "--queries",
        choices=("repeat", "distinct"),
        default="repeat",
        help="repeat: few distinct queries per client (query-embedding cache hits); "
        "distinct: nearly every search embeds its query",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting, as MEMVAULT_<NAME> (repeatable), e.g. --set read_threads=4",
    )
    args = parser.parse_args(argv)
    settings = dict(item.split("=", 1) for item in args.set if "=" in item)
    if len(settings) != len(args.set):
        raise SystemExit("--set takes NAME=VALUE")
    if not (1 <= args.clients <= 64 and 1 <= args.seconds <= 600):
        raise SystemExit("--clients must be 1-64 and --seconds 1-600")
    report = run(
        args.clients,
        args.seconds,
        parse_mix(args.mix),
        args.src,
        args.amem == "on",
        settings,
        distinct=args.queries == "distinct",
    )
    report["amem"] = args.amem
    report["queries"] = args.queries
    report["settings"] = settings
    write_json(args.out, report)
    print(
        f"{args.clients} clients, {report['seconds']} s, {report['total_per_s']} requests/s, "
        f"server CPU {report['server_cpu_ms_per_request']} ms/request "
        f"({report['server_cpu_share']} cores), client CPU "
        f"{report['client_cpu_ms_per_request']} ms/request, load {os.getloadavg()[0]:.1f}"
    )
    for op, r in report["ops"].items():
        print(
            f"  {op:7s} {r['per_s']:7.1f}/s  p50 {r['p50_ms']:7.1f}  p95 {r['p95_ms']:7.1f}  "
            f"p99 {r['p99_ms']:7.1f} ms  (n={r['count']})"
        )
    print(f"  errors: {report['errors'] or 'none'}")
    if report["batching"]:
        print("  mean batch: " + ", ".join(f"{k} {v}" for k, v in report["batching"].items()))


if __name__ == "__main__":
    main()
