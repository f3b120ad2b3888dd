"""The bench's shared harness: argument parsing, synthetic texts, timing statistics, memory,
a vault in a data directory, and JSON results under `bench/out/`.

Every kept benchmark (bench/README.md) takes its common pieces from here:

- `arg_parser(__doc__)`: an `argparse` parser described by the script's first docstring line;
- `TextMaker` (varied look-alike memories and questions) and `sentence(i)` (a distinct, PII-free
  sentence, for benchmarks that only need distinct notes);
- `percentile`, `Latency`, `timed_ms`: milliseconds and their p50/p95;
- `peak_rss_mib`, `rss_mib`, `smaps_mib`: the process's memory, whole or split by mapping;
- `open_vault(root, embedder)`: the embedded services in a data directory;
- `OUT_DIR`, `write_json(name, report)`: where results are written.

The synthetic texts are varied: everyday facts about people, built from word lists so that
no two are equal (an exact duplicate would short-cut the write path and flatter the figures) and
many look alike (same templates, different names, objects and places), like a user's memories.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the vault is imported where it is opened: the data-only helpers stay light
    from memvault.embed.base import Embedder
    from memvault.runtime.factory import Services


OUT_DIR = Path(__file__).resolve().parent / "out"


def arg_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by the first line of the script's docstring (`--help` shows it)."""
    return argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)


def write_json(name: str | Path, report: Any) -> Path:
    """Write `report` as indented JSON to `name` (a bare file name lands in `OUT_DIR`)."""
    path = Path(name)
    if path.parent == Path("."):
        path = OUT_DIR / path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _words(text: str, sep: str) -> tuple[str, ...]:
    return tuple(text.split(sep))


NAMES = _words(
    "Alice Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kira Liam Maya Noor Omar Priya "
    "Quinn Rosa Sven Tara Umar Vera Wen Ximena Yusuf Zoe Amara Bruno Chloe Diego",
    " ",
)
RELATIONS = _words(
    "sister brother mother father cousin neighbour colleague manager friend roommate "
    "daughter son uncle aunt partner coach teacher landlord",
    " ",
)
VERBS = _words(
    "bought|sold|borrowed|repaired|painted|lost|found|ordered|returned|cooked|planted|"
    "rented|booked|cancelled|recommended|reviewed|shipped|assembled|cleaned|measured",
    "|",
)
OBJECTS = _words(
    "a blue bicycle|an old piano|a vegetable garden|the kitchen table|a camping tent|"
    "a vintage camera|the spare car|a pair of hiking boots|a sourdough starter|a laptop stand|"
    "the garden shed|a wool sweater|a chess set|a coffee grinder|a kayak|a bookshelf|"
    "a telescope|a rice cooker|the guest room|a violin|a board game|a winter coat|"
    "a fish tank|a standing desk|a sewing machine|a bird feeder|a tennis racket|a lamp",
    "|",
)
PLACES = _words(
    "market|harbour|library|bakery|train station|hardware store|flea market|community hall|"
    "airport|museum|park|office|beach house|mountain cabin|farm shop|repair cafe|garage|"
    "old town|night market|bookshop|conference centre|swimming pool|school fair|vineyard",
    "|",
)
WHENS = _words(
    "last spring|in early March|over the summer|two winters ago|during the holidays|"
    "on a rainy Sunday|after the wedding|before the move|at the end of autumn|in late June|"
    "during a heatwave|on her birthday|on his birthday|after the marathon|in the new year",
    "|",
)
FEELINGS = _words(
    "happy|annoyed|surprised|relieved|proud|nervous|delighted|disappointed|curious|amused", "|"
)
REASONS = _words(
    "because it was on sale|since the old one broke|as a gift for a friend|to save some money|"
    "for a weekend project|after reading a review|because the shop was closing|"
    "to try something new|for the new flat|on a friend's advice|to replace a broken one",
    "|",
)
TOPICS = _words(
    "cycling|music|gardening|furniture|camping|photography|cars|hiking|baking|tools|"
    "knitting|chess|coffee|boats|books|astronomy|cooking|travel|tennis|pets",
    "|",
)

TEMPLATES = (
    "{name}'s {rel} {verb} {obj} at the {place} {when} {reason}.",
    "{when}, {name} {verb} {obj} near the {place} and felt {feel} about it.",
    "{name} told me the {rel} {verb} {obj} {reason}; it happened {when}.",
    "My {rel} {name} {verb} {obj} from the {place} {when} and was {feel}.",
    "Remember that {name} {verb} {obj} {when} {reason}, at the {place}.",
    "{name} prefers {topic} to {topic2}, and {verb} {obj} at the {place} {when}.",
)
QUESTIONS = (
    "What did {name}'s {rel} buy at the {place}?",
    "When did {name} get {obj}?",
    "Who {verb} {obj} {reason}?",
    "Where did my {rel} find {obj}?",
    "Does {name} like {topic}?",
    "What happened at the {place} {when}?",
)


class TextMaker:
    """Unique, varied ~100-character memories and look-alike questions, seeded.

    Uniqueness: a running counter picks the template and the words by mixed radix over a
    shuffled order, so the first tens of millions of texts never repeat.
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._count = 0
        self._lists: list[list[str]] = [
            list(x)
            for x in (NAMES, RELATIONS, VERBS, OBJECTS, PLACES, WHENS, FEELINGS, REASONS, TOPICS)
        ]
        for words in self._lists:
            self._rng.shuffle(words)
        self._offset = self._rng.randrange(10**9)

    def _fields(self, n: int) -> dict[str, str]:
        keys = ("name", "rel", "verb", "obj", "place", "when", "feel", "reason", "topic")
        out: dict[str, str] = {}
        # A multiplicative step scatters consecutive counters over the whole space.
        value = (n * 2_654_435_761 + self._offset) % (10**15)
        for key, words in zip(keys, self._lists, strict=True):
            value, digit = divmod(value, len(words))
            out[key] = words[digit]
        topics = self._lists[-1]
        out["topic2"] = topics[(topics.index(out["topic"]) + 1 + value % 7) % len(topics)]
        return out

    def memory(self) -> str:
        """The next memory sentence (never repeats within one maker)."""
        self._count += 1
        fields = self._fields(self._count)
        text = TEMPLATES[self._count % len(TEMPLATES)].format(**fields)
        return text[0].upper() + text[1:]

    def memories(self, n: int) -> list[str]:
        return [self.memory() for _ in range(n)]

    def question(self) -> str:
        """A look-alike question; questions are distinct so no query hits the embedding cache."""
        self._count += 1
        fields = self._fields(self._count)
        template = QUESTIONS[self._count % len(QUESTIONS)]
        return f"{template.format(**fields)} (#{self._count})"


SENTENCE_WORDS = (
    "river",
    "lamp",
    "garden",
    "piano",
    "winter",
    "orange",
    "ticket",
    "violet",
    "harbor",
)


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
    picks = [SENTENCE_WORDS[(i * 7 + k * 3) % len(SENTENCE_WORDS)] for k in range(5)]
    return f"Note about the {' '.join(picks)} plan, item {letters(i)}"


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation; NaN for no samples."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass
class Latency:
    """Millisecond samples of one operation."""

    samples: list[float]

    @property
    def p50(self) -> float:
        return percentile(self.samples, 50)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 95)

    def summary(self) -> dict[str, float]:
        return {
            "n": len(self.samples),
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "mean_ms": round(statistics.fmean(self.samples), 3) if self.samples else float("nan"),
        }


def timed_ms(fn: Callable[..., Any], *args: Any) -> float:
    """Wall time of one call `fn(*args)` in milliseconds."""
    start = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - start) * 1000


def peak_rss_mib() -> float:
    """This process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def open_vault(
    root: Path, embedder: Embedder, *, encrypted: bool = True, screen: bool = True
) -> Services:
    """Embedded services in `root`, sharing the loaded `embedder`.

    `encrypted=False` swaps in `NullKeyring` (same keystore work, no AES-GCM) to isolate the
    cost of encryption; everything else is the production path.
    """
    from memvault.config import Settings
    from memvault.keyring import FileMasterKey
    from memvault.runtime.factory import open_services
    from memvault.testing import NullKeyring

    settings = Settings(data_dir=root)
    root.mkdir(parents=True, exist_ok=True)
    keyring = None
    if not encrypted:
        keyring = NullKeyring.open(
            settings.resolved_keystore_url(), FileMasterKey(settings.resolved_master_key_file())
        )
    return open_services(settings, embedder=embedder, keyring=keyring, screen=screen)


def autocommit(url: str, statement: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE) on the server at `url`."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(statement))
    engine.dispose()


def ensure_wal_recycle_off(url: str) -> None:
    """Configure the server as a PostgreSQL keystore needs (`wal_recycle = off`, docs/keyring.md;
    memvault refuses one without it), as an operator would and as the test suite does: ALTER
    SYSTEM and a reload, then wait until new backends see it. `url` is a superuser's."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    setting = text("SELECT current_setting('wal_recycle')")
    try:
        with engine.connect() as conn:
            if conn.execute(setting).scalar_one() == "off":
                return
            conn.execute(text("ALTER SYSTEM SET wal_recycle = off"))
            conn.execute(text("SELECT pg_reload_conf()"))
        print("set wal_recycle = off on the server (a keystore needs it)", file=sys.stderr)
        for _ in range(50):
            engine.dispose()  # a fresh backend each round
            with engine.connect() as conn:
                if conn.execute(setting).scalar_one() == "off":
                    return
            time.sleep(0.1)
    finally:
        engine.dispose()
