"""Re-ranking of the fused pool by note shape flags sealed at ingest.

`hybrid` and `full` search fuse the two scoped prefetches (`memvault.vault.ranking`) into a
pool of up to 100 candidates. This stage adds five features to each candidate's fused score
and sorts the pool again before it is cut to the requested size (`Rerank` also has weights for
the session's best fused score and size in the pool, and extra BM25 and dense shares):

- **speaker**: the query names the note's speaker (+), or names only other speakers of the
  pool (-). The speaker is the `Name:` prefix of the note's text, parsed at ingest;
- **question**: the note asks a question (a penalty: questions rarely hold the answer);
- **length**: log token count, centred on `REF_TOKENS`;
- **first**: the first note of its session (no predecessor in the point's payload);
- **same session**: the note's session is the session of one of the pool's top 3.

The flags (speaker, question, token count) are computed at ingest by `note_flags` and sealed
inside the note's attributes envelope (`NoteCodec`, AES-GCM under the scope's data key), so no
index, SQL column or log holds them in clear. At query time the pool's attribute envelopes
are read in the caller's scope (`live_records`) and decrypted, without the text. A note
written before the flags existed has none: each of its features is 0 (neutral), and its
session is still known from its sealed `session_id`.

Weights are per embedding model (`RERANK_BY_MODEL`), chosen on LoCoMo conversations 0-4 and
confirmed on 5-9 (`bench/locomo_rerank.py`, retired at d6cb986; docs/retrieval.md). The study
behind the feature set is `../shared/reference/rerank-study/`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memvault.vault.ranking import Scored, mostly_han

if TYPE_CHECKING:
    from memvault.vault.scoped_reads import ScopedReads

FLAGS_KEY = "shape"
"""The key of the shape flags inside a note's sealed attributes."""
FLAGS_VERSION = 1
REF_TOKENS = 10
"""The token count the length feature is centred on (a LoCoMo turn's median is about 10)."""
MAX_SPEAKER_CHARS = 40

_SPEAKER = re.compile(r"\s*([A-Z][\w'.\-]*(?: [A-Z][\w'.\-]*){0,2})\s*:\s")
_WORD = re.compile(r"\w+")


def parse_speaker(text: str) -> str | None:
    """The speaker a text names in a `Name: ...` prefix (one to three capitalised words),
    casefolded; None when it has none."""
    match = _SPEAKER.match(text[: MAX_SPEAKER_CHARS + 8])
    if match is None or len(match.group(1)) > MAX_SPEAKER_CHARS:
        return None
    return match.group(1).casefold()


def note_flags(text: str, tokens: Sequence[str]) -> dict[str, Any]:
    """The shape flags of a note's text, to seal with its attributes: `{"shape": {...}}`.

    `tokens` are the note's own BM25 tokens (`SparseEncoder.tokens`), already computed by the
    write. The flags are the speaker (when the text has a `Name:` prefix), whether the text
    asks a question, and its token count.
    """
    flags: dict[str, Any] = {
        "v": FLAGS_VERSION,
        "q": int("?" in text or "\uff1f" in text),
        "n": len(tokens),
    }
    speaker = parse_speaker(text)
    if speaker is not None:
        flags["spk"] = speaker
    return {FLAGS_KEY: flags}


@dataclass(frozen=True, slots=True)
class NoteShape:
    """What the re-ranker knows of one candidate, from its decrypted attributes."""

    session: str | None = None
    speaker: str | None = None
    question: bool | None = None
    tokens: int | None = None


NEUTRAL = NoteShape()


def shape_of(attrs: Mapping[str, Any]) -> NoteShape:
    """A candidate's shape from its decrypted attributes; unknown parts stay None (neutral)."""
    session = attrs.get("session_id")
    flags = attrs.get(FLAGS_KEY)
    if not isinstance(flags, dict):
        return NoteShape(session=session if isinstance(session, str) else None)
    speaker, question, tokens = flags.get("spk"), flags.get("q"), flags.get("n")
    return NoteShape(
        session=session if isinstance(session, str) else None,
        speaker=speaker if isinstance(speaker, str) else None,
        question=bool(question) if isinstance(question, int) else None,
        tokens=tokens if isinstance(tokens, int) and tokens >= 0 else None,
    )


@dataclass(frozen=True, slots=True)
class Rerank:
    """The re-ranker's weights: each multiplies one feature added to the fused score."""

    speaker: float = 0.3
    question: float = 0.3
    length: float = 0.3
    first: float = 0.1
    same_session: float = 0.2
    session_best: float = 0.0
    """Times the best fused score (at least 0) of the pool's notes of the same session."""
    session_count: float = 0.0
    """Times log(1 + the number of the pool's other notes of the same session)."""
    bm25: float = 0.0
    dense: float = 0.0
    """Extra shares of the normalised BM25 and dense scores (already in the fused score)."""
    pool: int = 100
    """How many fused candidates are re-ranked (the top 50 + 50 union holds at most 100)."""
    han: bool = False
    """Whether a query written mostly in Han characters is re-ranked (weights are fit on
    English conversations only)."""

    def for_query(self, query: str) -> Rerank | None:
        """These weights for `query`, or None when it is not re-ranked."""
        if not self.han and mostly_han(query):
            return None
        return self


RERANK_BY_MODEL: dict[str, Rerank | None] = {
    # Chosen on LoCoMo conversations 0-4 (best sum of overall and multi-hop R@10 over a seeded
    # random search), confirmed on 5-9: docs/retrieval.md (retired `bench/locomo_rerank.py`).
    # R@10 .818 on 0-4, .809 on 5-9, .813 on all 10; multi-hop .511 / .495 / .503.
    "use-m3": Rerank(
        speaker=0.3,
        question=0.4,
        length=0.3,
        first=0.2,
        same_session=0.15,
        session_best=0.1,
        session_count=0.02,
        bm25=0.1,
    ),
}
DEFAULT_RERANK: Rerank | None = Rerank()
"""Other models: the study's five hand-set weights (not fit for them)."""


def rerank_for(model_id: str) -> Rerank | None:
    """The re-ranking weights for an embedding model (None: the stage is off)."""
    return RERANK_BY_MODEL.get(model_id, DEFAULT_RERANK)


def named_speakers(query: str, speakers: set[str]) -> set[str]:
    """The speakers (casefolded full names) whose first name the query names as a word."""
    if not speakers:
        return set()
    words = set(_WORD.findall(query.casefold()))
    return {s for s in speakers if s.split(" ", 1)[0] in words}


def reorder(
    candidates: Sequence[Scored],
    shapes: Mapping[str, NoteShape],
    query: str,
    weights: Rerank,
) -> list[Scored]:
    """The fused candidates (best first) with the shape features added, best first again.

    A candidate without a shape in `shapes` gets 0 for every feature; ties keep the fused
    order (a stable sort).
    """
    if not candidates:
        return []
    shape = [shapes.get(c.hit.id, NEUTRAL) for c in candidates]
    named = named_speakers(query, {s.speaker for s in shape if s.speaker})
    top_sessions = {s.session for s in shape[:3] if s.session}
    best: dict[str, float] = {}
    count: dict[str, int] = {}
    for c, s in zip(candidates, shape, strict=True):
        if s.session is not None:
            best[s.session] = max(best.get(s.session, 0.0), c.score)
            count[s.session] = count.get(s.session, 0) + 1
    ref = math.log1p(REF_TOKENS)
    out = []
    for c, s in zip(candidates, shape, strict=True):
        bonus = weights.bm25 * c.bm25 + weights.dense * c.dense
        if named and s.speaker is not None:
            bonus += weights.speaker if s.speaker in named else -weights.speaker
        if s.question:
            bonus -= weights.question
        if s.tokens is not None:
            bonus += weights.length * (math.log1p(s.tokens) - ref)
        if s.session is not None:
            if "prev" not in c.hit.payload:
                bonus += weights.first
            if s.session in top_sessions:
                bonus += weights.same_session
            bonus += weights.session_best * best[s.session]
            bonus += weights.session_count * math.log1p(count[s.session] - 1)
        out.append(replace(c, score=c.score + bonus) if bonus else c)
    out.sort(key=lambda c: c.score, reverse=True)
    return out


class PoolReranker:
    """The re-ranking stage of one search: reads and decrypts the pool's attributes in the
    caller's scope, then `reorder`s. Called by `ranking.search_fused` with the fused pool."""

    __slots__ = ("_query", "_view", "_weights", "shapes")

    def __init__(self, view: ScopedReads, query: str, weights: Rerank) -> None:
        self._view = view
        self._query = query
        self._weights = weights
        self.shapes: dict[str, NoteShape] = {}

    def __call__(self, ranked: list[Scored]) -> list[Scored]:
        """Re-rank the top `pool` fused candidates; the rest keep their order below them."""
        head, tail = ranked[: self._weights.pool], ranked[self._weights.pool :]
        self.shapes = self.load([c.hit for c in head])
        return reorder(head, self.shapes, self._query, self._weights) + tail

    def load(self, hits: Sequence[Any]) -> dict[str, NoteShape]:
        """The shapes of the readable, live notes among `hits` (after their scope check)."""
        view = self._view
        view.check_hits(hits)
        records = view.live_records([h.id for h in hits])
        vault = view.vault
        return {
            i: shape_of(vault.codec.open_attrs(vault.row_scope(r), r.id, r.key_version, r.attrs_ct))
            for i, r in records.items()
        }


def pool_reranker(view: ScopedReads, query: str, model_id: str) -> PoolReranker | None:
    """The re-ranking stage for a search of `query` in `view`, or None when it is off."""
    weights = rerank_for(model_id)
    weights = weights.for_query(query) if weights is not None else None
    return PoolReranker(view, query, weights) if weights is not None else None
