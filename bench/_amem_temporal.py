"""A temporal suite (issue 31): facts that change across sessions, asked now and `as_of` a date.

Through REST (the real app over an in-process ASGI client, A-MEM off and then on, each in a
fresh data directory): each of `--people` people has one fact per attribute (colour, car, job,
instrument, ...) that changes two or three times over six monthly sessions. Every version is
one `POST /v1/memories` with its `session_id`, `occurred_at` and `source`, written in date order
and interleaved across people, as a conversation would write them. Then, per (person,
attribute):

- **now**: `POST /v1/memories/search` with the question ("What car does Bob drive?"): correct
  when the top result is the latest version;
- **as of**: the same question with `as_of` a day before each later version: correct when the
  top result is the version valid then.

A miss is split in two: **temporal** (the top result is another version of the asked fact, the
error this suite is about) and **retrieval** (the top result is about another person or
attribute, which the ranking decides, not validity). Also counted: searches whose top 5 shows a
version older than the one asked for (stale). No memory text is printed: only counts.

Run: nice .venv/bin/python -m bench.locomo_amem --suite temporal [--people 12]
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from memvault.api.app import create_app
from memvault.config import Settings
from memvault.runtime.factory import open_services

OPERATOR = "mvop_bench-temporal-operator-key-0123"
PEOPLE = [
    "Bob",
    "Alice",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Yvonne",
]
# (statement, question, values): each statement gives one person's single-valued fact (one
# favourite colour, one car, one job at a time), so a later value replaces the earlier one.
ATTRIBUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("{p}'s favourite colour is {v}", "What is {p}'s favourite colour?",
     ("green", "blue", "red", "yellow", "purple", "orange")),
    ("{p} drives a {v}", "What car does {p} drive?",
     ("Volvo", "Toyota", "Tesla", "Peugeot", "Subaru", "Fiat")),
    ("{p} works as a {v}", "What does {p} work as?",
     ("nurse", "teacher", "plumber", "pilot", "baker", "librarian")),
    ("{p}'s favourite food is {v}", "What is {p}'s favourite food?",
     ("sushi", "lasagne", "curry", "paella", "dumplings", "tacos")),
    ("{p}'s favourite sport is {v}", "What is {p}'s favourite sport?",
     ("tennis", "rugby", "cricket", "hockey", "cycling", "rowing")),
    ("{p}'s usual coffee order is {v}", "What coffee does {p} usually order?",
     ("an espresso", "a flat white", "a cappuccino", "a mocha", "a cortado", "an oat latte")),
    ("{p}'s favourite book is {v}", "What is {p}'s favourite book?",
     ("Dune", "Middlemarch", "Beloved", "Emma", "Ulysses", "Persuasion")),
    ("{p}'s current project is {v}", "What is {p}'s current project?",
     ("the garden shed", "a podcast", "a marathon plan", "a quilt", "a chess engine",
      "a bakery app")),
)  # fmt: skip
SESSION_DATES = [datetime(2026, month, 10, 18, 0, tzinfo=UTC) for month in range(1, 7)]


@dataclass(frozen=True)
class Version:
    person: str
    attribute: int
    session: int  # index into SESSION_DATES
    text: str


def timeline(people: int) -> list[Version]:
    """Every version of every (person, attribute), in date order, people interleaved. Person i's
    attribute a changes 2 or 3 times (3 when i + a is even), at sessions spread over six months."""
    versions: list[Version] = []
    for i, person in enumerate(PEOPLE[:people]):
        for a, (statement, _, values) in enumerate(ATTRIBUTES):
            sessions = (0, 2, 4) if (i + a) % 2 == 0 else ((i + a) % 3, 5)
            for k, session in enumerate(sessions):
                value = values[(i + a + k) % len(values)]
                text = statement.format(p=person, v=value)
                versions.append(Version(person, a, session, text))
    return sorted(versions, key=lambda v: (v.session, v.attribute, PEOPLE.index(v.person)))


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def run(amem: bool, people: int) -> dict[str, Any]:
    """Write the timeline through REST with A-MEM `amem`, then ask every question."""
    with tempfile.TemporaryDirectory(prefix="temporal-") as tmp:
        services = open_services(Settings(data_dir=Path(tmp), amem=amem))
        try:
            with TestClient(create_app(services, operator_key=OPERATOR)) as client:
                return _ask(client, timeline(people))
        finally:
            services.close()


def _ask(client: TestClient, versions: list[Version]) -> dict[str, Any]:
    op = {"Authorization": f"Bearer {OPERATOR}"}
    admin = client.post("/v1/operator/tenants", json={"tenant_id": "temporal"}, headers=op)
    auth = {"Authorization": f"Bearer {admin.json()['api_key']}"}
    issued = client.post("/v1/admin/keys", json={"user_id": "u", "agent_id": "a"}, headers=auth)
    agent = {"Authorization": f"Bearer {issued.json()['api_key']}"}
    ids: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for n, v in enumerate(versions):
        body = {
            "text": v.text,
            "session_id": f"s{v.session + 1}",
            "occurred_at": iso(SESSION_DATES[v.session] + timedelta(minutes=n % 600)),
            "source": "chat",
        }
        r = client.post("/v1/memories", json=body, headers=agent)
        if r.status_code != 201:
            raise SystemExit(f"add {n} answered {r.status_code} ({r.json()['error']['code']})")
        ids.setdefault((v.person, v.attribute), []).append((v.session, r.json()["id"]))
    fact_of = {note_id: fact for fact, chain in ids.items() for _, note_id in chain}
    counts = {"now": [0, 0], "as_of": [0, 0], "stale_in_top5": 0, "searches": 0}
    misses = {"temporal": 0, "retrieval": 0}
    for (person, attribute), chain in ids.items():
        question = ATTRIBUTES[attribute][1].format(p=person)
        asks: list[tuple[str, str | None, int]] = [("now", None, len(chain) - 1)]
        for k in range(len(chain) - 1):  # the day before version k + 1: version k is valid
            before = SESSION_DATES[chain[k + 1][0]] - timedelta(days=1)
            asks.append(("as_of", iso(before), k))
        for kind, as_of, want in asks:
            body: dict[str, Any] = {"query": question, "limit": 5}
            if as_of is not None:
                body["as_of"] = as_of
            r = client.post("/v1/memories/search", json=body, headers=agent)
            r.raise_for_status()
            shown = [hit["id"] for hit in r.json()["results"]]
            counts[kind][1] += 1
            right = bool(shown) and shown[0] == chain[want][1]
            counts[kind][0] += int(right)
            if not right:
                same_fact = bool(shown) and fact_of.get(shown[0]) == (person, attribute)
                misses["temporal" if same_fact else "retrieval"] += 1
            older = {note_id for _, note_id in chain[:want]}
            counts["stale_in_top5"] += int(bool(older & set(shown)))
            counts["searches"] += 1
    now, as_of = counts["now"], counts["as_of"]
    return {
        "notes": len(versions),
        "now_correct": round(now[0] / now[1], 3),
        "as_of_correct": round(as_of[0] / as_of[1], 3),
        "overall_correct": round((now[0] + as_of[0]) / (now[1] + as_of[1]), 3),
        "questions": now[1] + as_of[1],
        "stale_in_top5": counts["stale_in_top5"],
        "temporal_misses": misses["temporal"],
        "retrieval_misses": misses["retrieval"],
        "temporal_correct": round(1 - misses["temporal"] / (now[1] + as_of[1]), 3),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the temporal suite."""
    parser.add_argument("--people", type=int, default=12, help=f"at most {len(PEOPLE)}")


def main(args: argparse.Namespace) -> dict[str, Any]:
    """A-MEM off, then on; prints one line each and returns both."""
    results: dict[str, Any] = {}
    for amem in (False, True):
        r = run(amem, min(args.people, len(PEOPLE)))
        results[f"amem_{'on' if amem else 'off'}"] = r
        print(
            f"temporal suite, A-MEM {'on ' if amem else 'off'}: {r['questions']} questions on "
            f"{r['notes']} notes: now {r['now_correct']:.3f}, as of {r['as_of_correct']:.3f}, "
            f"overall {r['overall_correct']:.3f} (misses: {r['temporal_misses']} temporal, "
            f"{r['retrieval_misses']} retrieval; without the temporal ones "
            f"{r['temporal_correct']:.3f}); {r['stale_in_top5']} searches showed an older "
            "version in the top 5",
            flush=True,
        )
    return results
