"""Shared pieces of `bench.foundation`: synthetic memories, timing statistics, vault opening.

The texts are synthetic but varied: everyday facts about people, built from word lists so that
no two are equal (an exact duplicate would short-cut the write path and flatter the figures) and
many look alike (same templates, different names, objects and places), like a user's memories.
"""

from __future__ import annotations

import random
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.keyring import FileMasterKey
from memvault.runtime.factory import Services, open_services
from memvault.testing import NullKeyring


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


def percentile(samples: list[float], q: float) -> float:
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


def open_vault(
    root: Path, embedder: Embedder, *, encrypted: bool = True, screen: bool = True
) -> Services:
    """Embedded services in `root`, sharing the loaded `embedder`.

    `encrypted=False` swaps in `NullKeyring` (same keystore work, no AES-GCM) to isolate the
    cost of encryption; everything else is the production path.
    """
    settings = Settings(data_dir=root)
    root.mkdir(parents=True, exist_ok=True)
    keyring = None
    if not encrypted:
        keyring = NullKeyring.open(
            settings.resolved_keystore_url(), FileMasterKey(settings.resolved_master_key_file())
        )
    return open_services(settings, embedder=embedder, keyring=keyring, screen=screen)
