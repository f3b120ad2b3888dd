"""Loaders and metrics shared by the retrieval benchmarks (`bench.locomo`, `bench.cmrc`).

The data sets live outside the repository, in `../shared/data` (see its README.md); the env var
`MEMVAULT_SHARED_DATA` points elsewhere. Nothing here touches the vault or a model, so the
tests in `tests/test_bench` run in milliseconds.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from bench._harness import percentile as percentile  # the harness's; re-exported

T = TypeVar("T", bound=Hashable)

# LoCoMo's evidence lists hold malformed ids ('D8:6; D9:17', 'D:11:26', 'D30:05', a bare 'D'):
# every well-formed id inside a string counts, leading zeros of the turn number are dropped.
EVIDENCE_ID = re.compile(r"D:?(\d+):0*(\d+)")

CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# Chinese sentence ends; a chunk never splits inside a sentence unless it alone is too long.
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])")


def shared_data_dir() -> Path:
    """`../shared/data` next to the checkout, or `MEMVAULT_SHARED_DATA` when set."""
    override = os.environ.get("MEMVAULT_SHARED_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


# -- LoCoMo ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn: its id (`D<session>:<turn>`), speaker, text and optional image caption."""

    dia_id: str
    speaker: str
    text: str
    caption: str | None = None

    def memory_text(self, *, captions: bool) -> str:
        """The memory stored for this turn: `speaker: text`, plus ` [image: caption]` if asked."""
        base = f"{self.speaker}: {self.text}"
        if captions and self.caption:
            return f"{base} [image: {self.caption}]"
        return base


@dataclass(frozen=True, slots=True)
class Question:
    """A QA item used as a query; `evidence` holds cleaned dia_ids of existing turns."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One LoCoMo conversation: one user's memory."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    session_dates: dict[int, float] = field(default_factory=dict)
    """Each session's date and time (epoch seconds, UTC), from `session_<n>_date_time`."""

    def session_of(self, turn: Turn) -> int:
        """The session number of a turn (`D<session>:<turn>`)."""
        return int(turn.dia_id[1:].split(":", 1)[0])

    def occurred_at(self, turn: Turn) -> float | None:
        """When the turn's session took place, if the conversation says."""
        return self.session_dates.get(self.session_of(turn))


def clean_evidence(raw: Iterable[str], known: Collection[str]) -> list[str]:
    """Every well-formed turn id in `raw` that names a turn in `known`, first occurrence order."""
    found: list[str] = []
    for item in raw:
        for session, turn in EVIDENCE_ID.findall(str(item)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known and dia_id not in found:
                found.append(dia_id)
    return found


def parse_conversation(raw: dict[str, object]) -> Conversation:
    """Turns in session order and the QA items that keep at least one evidence turn."""
    sessions = raw["conversation"]
    assert isinstance(sessions, dict)
    numbered = sorted(
        (int(key.removeprefix("session_")), value)
        for key, value in sessions.items()
        if key.startswith("session_") and isinstance(value, list)
    )
    turns = tuple(
        Turn(
            dia_id=str(t["dia_id"]),
            speaker=str(t["speaker"]),
            text=str(t["text"]),
            caption=t.get("blip_caption") or None,
        )
        for _, session in numbered
        for t in session
    )
    known = {t.dia_id for t in turns}
    questions = []
    qa = raw["qa"]
    assert isinstance(qa, list)
    for item in qa:
        evidence = clean_evidence(item.get("evidence") or [], known)
        if evidence:
            text, category = str(item["question"]), int(item["category"])
            questions.append(Question(text, category, tuple(evidence)))
    dates = {
        int(key.removeprefix("session_").removesuffix("_date_time")): parse_session_date(str(v))
        for key, v in sessions.items()
        if key.endswith("_date_time")
    }
    known_dates = {k: v for k, v in dates.items() if v is not None}
    return Conversation(str(raw["sample_id"]), turns, tuple(questions), known_dates)


def parse_session_date(value: str) -> float | None:
    """LoCoMo's `1:56 pm on 8 May, 2023` as epoch seconds (UTC); None if it does not parse."""
    try:
        moment = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC).timestamp()


def load_locomo(path: Path | None = None) -> list[Conversation]:
    """The ten LoCoMo conversations from `locomo/locomo10.json`."""
    path = path or shared_data_dir() / "locomo" / "locomo10.json"
    return [parse_conversation(c) for c in json.loads(path.read_text(encoding="utf-8"))]


# -- CMRC 2018 ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CmrcParagraph:
    """One CMRC paragraph and the questions whose answer it holds."""

    id: str
    context: str
    questions: tuple[str, ...]


def load_cmrc(path: Path | None = None) -> list[CmrcParagraph]:
    """The CMRC2018 dev paragraphs (SQuAD format) with their questions."""
    path = path or shared_data_dir() / "cmrc2018" / "cmrc2018_dev.json"
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [
        CmrcParagraph(str(p["id"]), str(p["context"]), tuple(str(q["question"]) for q in p["qas"]))
        for article in data
        for p in article["paragraphs"]
    ]


def split_chunks(text: str, max_chars: int) -> list[str]:
    """Pack whole sentences into chunks of at most `max_chars` (0 = the whole text).

    A single sentence longer than `max_chars` is cut at `max_chars`. Blank chunks are dropped.
    """
    text = text.strip()
    if max_chars <= 0 or len(text) <= max_chars:
        return [text] if text else []
    chunks: list[str] = []
    current = ""
    for sentence in (s for s in _SENTENCE_END.split(text) if s.strip()):
        while len(sentence) > max_chars:
            if current.strip():
                chunks.append(current.strip())
                current = ""
            chunks.append(sentence[:max_chars].strip())
            sentence = sentence[max_chars:]
        if len(current) + len(sentence) > max_chars and current.strip():
            chunks.append(current.strip())
            current = ""
        current += sentence
    if current.strip():
        chunks.append(current.strip())
    return [c for c in chunks if c]


# -- metrics -----------------------------------------------------------------------------------


def dedupe(items: Iterable[T]) -> list[T]:
    """Items in first-seen order, each once."""
    seen: set[T] = set()
    out: list[T] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def recall_at(ranked: Sequence[T], relevant: Collection[T], k: int) -> float:
    """Fraction of `relevant` found in the first `k` of `ranked` (0 when nothing is relevant)."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(set(relevant))


def hit_at(ranked: Sequence[T], relevant: Collection[T], k: int) -> float:
    """1.0 when any relevant item is in the first `k` of `ranked`, else 0.0."""
    return 1.0 if set(ranked[:k]) & set(relevant) else 0.0


def reciprocal_rank(ranked: Sequence[T], relevant: Collection[T], k: int | None = None) -> float:
    """1/rank of the first relevant item within the first `k` (all when None), else 0.0."""
    wanted = set(relevant)
    for rank, item in enumerate(ranked[:k] if k else ranked, start=1):
        if item in wanted:
            return 1.0 / rank
    return 0.0


@dataclass
class MetricTable:
    """Per-group sums of named metrics; `mean` reads one group's average."""

    sums: dict[str, dict[str, float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, groups: Iterable[str], values: dict[str, float]) -> None:
        """Count one query's `values` in every group of `groups` (e.g. its category and 'all')."""
        for group in groups:
            sums = self.sums.setdefault(group, {})
            for name, value in values.items():
                sums[name] = sums.get(name, 0.0) + value
            self.counts[group] = self.counts.get(group, 0) + 1

    def mean(self, group: str, name: str) -> float:
        """Average of `name` over the group's queries (nan for an empty group)."""
        count = self.counts.get(group, 0)
        return self.sums[group][name] / count if count else math.nan

    def as_dict(self) -> dict[str, dict[str, float]]:
        """{group: {"n": count, metric: mean, ...}} for JSON output."""
        return {
            group: {"n": self.counts[group], **{n: self.mean(group, n) for n in sums}}
            for group, sums in self.sums.items()
        }
