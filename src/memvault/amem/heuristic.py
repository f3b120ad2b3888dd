"""`HeuristicJudge`: the offline, deterministic judge — memvault's default, and the fallback
whenever a model is down, slow or answers something that cannot be trusted.

It decides from tokens (`memvault.text.tokenize`: jieba for Chinese, Snowball stems for
English), corpus statistics when the caller has them, and the cue lists in `amem/lexicon.py`:

- construction: tf·idf keywords, lexicon category and tags, note type by cues, the first clause
  as context;
- evolution: the same subject with a different place, number or date, or a negation → CONFLICT;
  an intention followed by a decision about the same thing → EVOLVE; the old note's key terms
  repeated with more detail → EXPAND; little shared content → NEW;
- the dialogue gate: declarative user/assistant sentences become facts; each fact is a duplicate
  (NONE), a negation (DELETE), a changed or richer detail (UPDATE) or NEW.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memvault.amem import lexicon as lx
from memvault.amem.judge import (
    MAX_KEYWORDS,
    MAX_TAGS,
    Construction,
    DocumentFrequency,
    Evolution,
    FactDecision,
    LinkVerdict,
    NeighbourUpdate,
    NoteType,
)
from memvault.amem.views import CATEGORIES, Candidate, Category, EvolutionAction
from memvault.text import tokenize

CONTEXT_CHARS = 120
MIN_FACT_WEIGHT = 10  # openclaw's write gate: under 10 characters (a Han character counts 2)
LINK_MIN_STRENGTH = 0.3
LINK_SIMILARITY_ALONE = 0.75  # link without shared words only when the embedding is this sure
DUPLICATE_JACCARD = 0.85
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_DIGITS = re.compile(r"^\d+(?:[.,]\d+)?$")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


@dataclass(frozen=True, slots=True)
class _Analysis:
    """One text, taken apart once."""

    lowered: str
    surface: tuple[str, ...]
    stems: tuple[str, ...]
    content: frozenset[str]  # stems that carry the subject: no owner, grammar, numbers, dates
    numbers: frozenset[str]
    dates: frozenset[str]
    negated: bool
    place: tuple[frozenset[str], str] | None  # (subject stems, first token of the place)


def _lower(text: str) -> str:
    normalized = unicodedata.normalize("NFKC", text).lower()
    return normalized.replace("’", "'").replace("‘", "'")


def _analyze(text: str) -> _Analysis:
    stems = tuple(tokenize(text))
    surface = tuple(tokenize(text, stem=False))
    if len(surface) != len(stems):  # never expected; stemming maps word to word
        surface = stems
    lowered = _lower(text)
    numbers = frozenset(s for s in stems if _DIGITS.match(s))
    dates = frozenset(s for s in surface if s in lx.WEEKDAYS_AND_MONTHS) | frozenset(
        _ISO_DATE.findall(lowered)
    )
    content = frozenset(
        stem
        for word, stem in zip(surface, stems, strict=True)
        if stem not in numbers
        and word not in lx.WEEKDAYS_AND_MONTHS
        and word not in lx.GENERIC_SUBJECTS
        and stem not in lx.GENERIC_SUBJECTS
        and word not in lx.WEAK_WORDS
        and stem not in lx.WEAK_WORDS
        and not (len(word) == 1 and _HAN.match(word))
    )
    return _Analysis(
        lowered=lowered,
        surface=surface,
        stems=stems,
        content=content,
        numbers=numbers,
        dates=dates,
        negated=bool(lx.NEGATION.search(lowered)),
        place=_place(text),
    )


def _place(text: str) -> tuple[frozenset[str], str] | None:
    """The place slot ("lives in X", "moved to X", "住在X") with the subject before it."""
    for pattern in (lx.PLACE_EN, lx.PLACE_ZH):
        match = pattern.search(text)
        if match is None:
            continue
        value = tokenize(match.group("value"))
        if value:
            subject = frozenset(tokenize(text[: match.start()]))
            return subject, value[0]
    return None


def _same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    # An empty subject ("Lives in Paris") is the note's owner, like "the user".
    owner = frozenset(lx.GENERIC_SUBJECTS)
    return (a - owner) == (b - owner)


def _coverage(part: frozenset[str], whole: frozenset[str]) -> float:
    """The share of `part`'s terms that `whole` repeats (0 when `part` is empty)."""
    return len(part & whole) / len(part) if part else 0.0


def _cjk_weight(text: str) -> int:
    return sum(2 if _HAN.match(ch) else 1 for ch in text.strip())


def _join(old: str, new: str) -> str:
    """`old` followed by `new`, as one text (no space after Chinese punctuation)."""
    old = old.rstrip()
    if not old:
        return new.strip()
    if old[-1] not in ".!?。！？":
        old += "。" if _HAN.match(old[-1]) else "."
    sep = "" if old[-1] in "。！？" else " "
    return old + sep + new.strip()


def _first_clause(text: str) -> str:
    """The first sentence of `text`, cut at a word boundary near CONTEXT_CHARS."""
    for part in lx.SENTENCE_END.split(text.strip()):
        clause = " ".join(part.split())
        if clause:
            break
    else:
        return ""
    if len(clause) > CONTEXT_CHARS:
        cut = clause[:CONTEXT_CHARS]
        space = cut.rfind(" ")
        clause = (cut[:space] if space > CONTEXT_CHARS // 2 else cut).rstrip(",;: ") + "…"
    elif clause[-1] not in ".!?。！？":
        clause += "。" if _HAN.match(clause[-1]) else "."
    return clause


def _relation(old: _Analysis, new: _Analysis) -> EvolutionAction:
    """How `new` relates to `old`, by the cues described in the module docstring."""
    shared = old.content & new.content
    same_place = (
        old.place is not None
        and new.place is not None
        and _same_subject(old.place[0], new.place[0])
    )
    same_value = same_place and old.place and new.place and old.place[1] == new.place[1]
    decided = lx.INTENT.search(old.lowered) and lx.DECISION.search(new.lowered)
    if decided and (shared or same_value):
        return "EVOLVE"
    if same_place and old.place and new.place and old.place[1] != new.place[1]:
        return "CONFLICT"
    smaller = min(len(old.content), len(new.content))
    about_same = bool(shared) and smaller > 0 and len(shared) / smaller >= 0.5
    if about_same:
        if old.negated != new.negated:
            return "CONFLICT"
        if old.numbers and new.numbers and old.numbers != new.numbers:
            return "CONFLICT"
        if old.dates and new.dates and old.dates != new.dates:
            return "CONFLICT"
    if shared and _coverage(old.content, new.content) >= 0.5:
        return "EXPAND"
    if same_place:  # the same place again, maybe with more detail
        return "EXPAND"
    return "NEW"


def _merge(old_text: str, old: _Analysis, new_text: str, new: _Analysis) -> str:
    """The surviving text of an EXPAND: the new text when it restates all of the old one."""
    if old.content <= new.content and old.numbers <= new.numbers:
        return new_text.strip()
    return _join(old_text, new_text)


class HeuristicJudge:
    """An offline judge: deterministic, no network, same answer for the same input."""

    name = "heuristic"

    def construct(
        self, text: str, *, document_frequency: DocumentFrequency | None = None
    ) -> Construction:
        """Keywords by tf·idf (idf from `document_frequency` when given), lexicon category and
        tags, note type by cues, the first clause as context, and topics for knowledge."""
        a = _analyze(text)
        keywords = _keywords(a, document_frequency)
        category = _category(a)
        labels = [tag for tag, words in lx.TAG_WORDS.items() if _hits(a, words)]
        tags = _unique([*labels, *keywords])[:MAX_TAGS]
        note_type = _note_type(a)
        topics: tuple[str, ...] = ()
        if note_type == "knowledge":
            topics = tuple(_surface_case(text, k) for k in keywords[:3]) or (category,)
        return Construction(
            keywords=tuple(keywords),
            tags=tuple(tags),
            context=_first_clause(text) or category,
            category=category,
            note_type=note_type,
            topics=topics,
        )

    def verify_links(self, text: str, candidates: Sequence[Candidate]) -> list[LinkVerdict]:
        """Link candidates that share subject terms (or a place slot) with `text`, or that the
        embedding alone finds very close; strength mixes word overlap and similarity."""
        a = _analyze(text)
        verdicts: list[LinkVerdict] = []
        for candidate in candidates:
            c = _analyze(candidate.text)
            shared = len(a.content & c.content)
            if a.place and c.place and _same_subject(a.place[0], c.place[0]):
                shared += 1
            smaller = max(1, min(len(a.content), len(c.content)))
            overlap = min(1.0, shared / smaller)
            similarity = min(1.0, max(0.0, candidate.similarity))
            strength = round(0.6 * overlap + 0.4 * similarity, 3)
            if shared and strength >= LINK_MIN_STRENGTH:
                verdicts.append(LinkVerdict(candidate.number, strength))
            elif similarity >= LINK_SIMILARITY_ALONE:
                verdicts.append(LinkVerdict(candidate.number, round(similarity, 3)))
        return verdicts

    def evolve(self, new_text: str, old: Candidate) -> Evolution:
        """EVOLVE (intent → decision), CONFLICT (changed place/number/date, negation), EXPAND
        (old terms repeated with detail) or NEW; EVOLVE keeps the new text, EXPAND merges."""
        o, n = _analyze(old.text), _analyze(new_text)
        action = _relation(o, n)
        if action == "EVOLVE":
            return Evolution("EVOLVE", new_text.strip())
        if action == "EXPAND":
            return Evolution("EXPAND", _merge(old.text, o, new_text, n))
        return Evolution(action)

    def evolve_neighbour(self, new_text: str, neighbour: Candidate) -> NeighbourUpdate | None:
        """Propagate tags to a linked note that shares terms with `new_text`: the shared terms
        and the new note's lexicon labels; give it a context if it had none."""
        a, n = _analyze(new_text), _analyze(neighbour.text)
        shared = a.content & n.content
        if not shared:
            return None
        shared_words = [w for w, s in zip(a.surface, a.stems, strict=True) if s in shared]
        labels = [tag for tag, words in lx.TAG_WORDS.items() if _hits(a, words)]
        tags = tuple(_unique([*neighbour.tags, *labels, *shared_words])[:MAX_TAGS])
        context = neighbour.context or _first_clause(neighbour.text) or None
        if tags == tuple(neighbour.tags) and context == neighbour.context:
            return None
        return NeighbourUpdate(context=context, tags=tags)

    def extract_facts(self, messages: Sequence[tuple[str, str]]) -> list[str]:
        """Declarative user/assistant sentences, in order, without duplicates; questions,
        greetings, acknowledgements, code blocks, short sentences and every other role (tool,
        system) are dropped."""
        facts: list[str] = []
        seen: set[str] = set()
        for role, content in messages:
            if role not in ("user", "assistant"):
                continue
            prose = re.sub(r"```.*?(```|$)", " ", content, flags=re.DOTALL)
            for raw in lx.SENTENCE_END.split(prose):
                sentence = " ".join(raw.split()).strip(" -*•>")
                if not _is_fact(sentence):
                    continue
                key = _lower(sentence).rstrip(".!。！")
                if key not in seen:
                    seen.add(key)
                    facts.append(sentence)
        return facts

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        """NONE for a near-duplicate; DELETE when the fact negates a candidate's subject;
        UPDATE when it changes or enriches a candidate's detail; otherwise NEW."""
        f = _analyze(fact)
        analyzed = [(c, _analyze(c.text)) for c in candidates]
        for candidate, c in analyzed:
            if _near_identical(f, c):
                return FactDecision("NONE", candidate.number)

        def rank(item: tuple[Candidate, _Analysis]) -> tuple[float, float, int]:
            candidate, c = item
            return (-len(f.content & c.content), -candidate.similarity, candidate.number)

        for candidate, c in sorted(analyzed, key=rank):
            if f.negated and not c.negated and _coverage(c.content, f.content) >= 0.5:
                return FactDecision("DELETE", candidate.number)
            action = _relation(c, f)
            if action in ("EVOLVE", "CONFLICT"):
                return FactDecision("UPDATE", candidate.number, fact.strip())
            if action == "EXPAND":
                return FactDecision("UPDATE", candidate.number, _merge(candidate.text, c, fact, f))
        return FactDecision("NEW", None, fact.strip())


def _near_identical(a: _Analysis, b: _Analysis) -> bool:
    sa, sb = set(a.stems), set(b.stems)
    if not sa or not sb or a.negated != b.negated:
        return False
    if a.numbers != b.numbers or a.dates != b.dates:
        return False
    return len(sa & sb) / len(sa | sb) >= DUPLICATE_JACCARD


def _is_fact(sentence: str) -> bool:
    if _cjk_weight(sentence) < MIN_FACT_WEIGHT or len(tokenize(sentence)) < 2:
        return False
    if sentence.endswith(("?", "？")) or lx.QUESTION_START.match(sentence):
        return False
    if lx.QUESTION_ZH.search(sentence.rstrip("。.!！")):
        return False
    return not lx.CHATTER.match(sentence)


def _hits(a: _Analysis, words: frozenset[str]) -> int:
    return sum(1 for w, s in zip(a.surface, a.stems, strict=True) if w in words or s in words)


def _category(a: _Analysis) -> Category:
    best: Category = "General"
    best_score = 0
    for category in CATEGORIES:
        score = _hits(a, lx.CATEGORY_WORDS[category])
        if score > best_score:
            best, best_score = category, score
    return best


def _note_type(a: _Analysis) -> NoteType:
    """Knowledge for rules, definitions and how-tos; memory for a person's dated episodes."""
    knowledge = 2 * len(lx.KNOWLEDGE_STRONG.findall(a.lowered))
    knowledge += len(lx.KNOWLEDGE_WEAK.findall(a.lowered))
    memory = len(lx.MEMORY_CUES.findall(a.lowered)) + len(a.dates)
    if knowledge == 0 and memory == 0:
        return "knowledge"  # a statement about the world, about no one, at no time
    return "knowledge" if knowledge > memory else "memory"


def _keywords(a: _Analysis, document_frequency: DocumentFrequency | None) -> list[str]:
    scores: dict[str, float] = {}
    words: dict[str, str] = {}
    order: dict[str, int] = {}
    for i, (word, stem) in enumerate(zip(a.surface, a.stems, strict=True)):
        if stem not in a.content or (stem.isdigit() and len(stem) < 4):
            continue
        words.setdefault(stem, word)
        order.setdefault(stem, i)
        scores[stem] = scores.get(stem, 0.0) + 1.0
    for stem in scores:
        if document_frequency is not None:
            df = max(float(document_frequency(stem)), 1e-6)
            scores[stem] *= math.log(1.0 + 1.0 / df)
    ranked = sorted(scores, key=lambda s: (-scores[s], order[s]))
    return [words[s] for s in ranked[:MAX_KEYWORDS]]


def _surface_case(text: str, word: str) -> str:
    """`word` as the text spells it (TypeScript, not typescript)."""
    match = re.search(re.escape(word), unicodedata.normalize("NFKC", text), re.IGNORECASE)
    return match.group(0) if match else word


def _unique(items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
