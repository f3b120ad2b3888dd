"""How A-MEM records what it decided about two notes: a typed relation, never moved text.

`relate(view, newer, older, action)` turns an evolution decision into a relation
(`memvault.vault.relations`):

| decision | relation written (newer → older) |
|---|---|
| a restatement (`restates`) | `duplicate_of` |
| EVOLVE, UPDATE, or a changed value of the same slot (`changed_slot`) | `supersedes` |
| EXPAND | `expands` |
| CONFLICT the judge leaves open | `conflicts_with` |

A new version hides the older note whole from default searches, so `version_action` keeps
`supersedes` only for an older note that states one fact (one sentence, not a question), a
newer note that asks nothing, and the same speaker when both name one (a `Name:` prefix);
otherwise the decision is recorded as `expands` and both notes stay current. On LoCoMo (chat
turns of several sentences) each of the offline judge's 18 supersessions hid a turn holding
other facts, and they cost R@10 .033 (docs/amem.md, "Retrieval with A-MEM on").

A relation that hides a note (`supersedes`, `duplicate_of`) or joins them by kind is written
only between notes with the same storage scope, owner, visibility and readers, and only when
the caller may write the older note (`may_relate`); otherwise a plain `link` joins them, so no
reader's view of a note changes because of a note it cannot read. Both notes keep their text.
Likewise only between notes of the same provenance (`memvault.vault.provenance`): a note
written in an untrusted session and a trusted note are only ever linked, so an injected page
can never make its note the current version of a trusted fact.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from memvault.amem.lexicon import SENTENCE_END
from memvault.errors import NotFound, PermissionDenied
from memvault.vault.links import put_link
from memvault.vault.provenance import same_provenance
from memvault.vault.relations import (
    CONFLICTS_WITH,
    DUPLICATE_OF,
    EXPANDS,
    SUPERSEDES,
    may_relate,
    put_relation,
)
from memvault.vault.rerank import parse_speaker

if TYPE_CHECKING:
    from memvault.vault.service import ScopedVault

KIND_OF_ACTION = {
    "DUPLICATE": DUPLICATE_OF,
    "EVOLVE": SUPERSEDES,
    "UPDATE": SUPERSEDES,
    "SUPERSEDE": SUPERSEDES,
    "EXPAND": EXPANDS,
    "CONFLICT": CONFLICTS_WITH,
}

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_SLOT = re.compile(
    r"^(?P<subject>.+?)\s+(?P<verb>is now|are now|is|are|was|were|lives in|live in|lives at|"
    r"works at|work at|works for|work for|works as|moved to|prefers|likes|loves|drives|owns)\s+"
    r"(?P<value>.+?)[.!]?$",
    re.IGNORECASE,
)
_QUESTION = ("?", "\uff1f")
VERSION_ACTIONS = frozenset({"EVOLVE", "UPDATE", "SUPERSEDE"})
"""Decisions that make the newer note a new version of the older one (`supersedes`)."""
_SUBJECT_STOP = frozenset({"it", "this", "that", "there", "he", "she", "they", "which", "what"})


def words(text: str) -> list[str]:
    """The words of a text, NFKC-folded and case-folded."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold().replace("’", "'"))


_FUNCTION_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "its",
        "his",
        "her",
        "their",
        "our",
        "my",
        "your",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "with",
        "and",
        "or",
        "for",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "as",
    }
)


def restates(new: str, old: str) -> bool:
    """True when `new` says nothing `old` does not: every word of it but function words
    ("the", "their", "of", ...) is in `old`."""
    new_words = set(words(new))
    content = new_words - _FUNCTION_WORDS
    return bool(new_words) and (content or new_words) <= set(words(old))


def sentences(text: str) -> list[str]:
    """The sentences of a text that hold a word (split after . ! ? ; and at line breaks)."""
    return [p for p in SENTENCE_END.split(text) if words(p)]


def one_fact(text: str) -> bool:
    """True when a text is one statement: a single sentence that asks nothing."""
    return len(sentences(text)) == 1 and not any(q in text for q in _QUESTION)


def version_action(action: str, new: str, old: str) -> str:
    """`action` (a judge's decision about `new` against `old`), unless it makes `new` a new
    version of `old` while `old` holds more than one fact, `new` asks a question, or the two
    name different speakers: a supersession would then hide facts `new` does not restate, so
    it becomes EXPAND, and both notes stay current."""
    if action not in VERSION_ACTIONS:
        return action
    asks = any(q in new for q in _QUESTION)
    speakers = parse_speaker(new), parse_speaker(old)
    other_speaker = None not in speakers and speakers[0] != speakers[1]
    return action if one_fact(old) and not asks and not other_speaker else "EXPAND"


def changed_slot(new: str, old: str) -> bool:
    """True when both texts give a value to the same slot ("Bob's favourite colour is ...",
    "Alice lives in ...") and the values differ: the newer one replaces the older."""
    a, b = _slot(new), _slot(old)
    return a is not None and b is not None and a[0] == b[0] and a[1] != b[1]


def same_subject(new: str, old: str) -> bool | None:
    """Whether both texts fill a slot of the same subject ("Bob's favourite colour is ...",
    "Bob's favourite colour is now ...", "The user lives in ..." and "The user moved to ..."):
    True; False when both have a slot but of different subjects ("Carol's favourite food" is
    not "Bob's favourite food"); None when either text has no slot to compare."""
    a, b = _slot(new), _slot(old)
    if a is None or b is None:
        return None
    return a[0][:-1] == b[0][:-1]  # the subject's words, whatever the verb ("lives in", "moved to")


def _slot(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    sentence = text.strip()
    if not sentence or len(sentence) > 200 or any(c in sentence[:-1] for c in ".!?;\n"):
        return None
    match = _SLOT.match(sentence)
    if match is None:
        return None
    subject = tuple(words(match["subject"]))
    verb = " ".join(words(match["verb"])).replace(" now", "")
    value = tuple(words(match["value"]))
    if not subject or not value or len(subject) > 6 or subject[0] in _SUBJECT_STOP:
        return None
    return (*subject, verb), value


def relate(view: ScopedVault, newer_id: str, older_id: str, action: str) -> str | None:
    """Record `action` (an evolution or dialogue decision) between two notes the caller reads.

    Returns the kind written (`duplicate_of`, `supersedes`, `expands`, `conflicts_with`, or
    `link` when the notes may not be related by kind), or None when nothing changed (the pair
    was already related, or a note went meanwhile)."""
    kind = KIND_OF_ACTION.get(action)
    try:
        newer = view.readable_row(newer_id)
        older = view.readable_row(older_id)
        typed = kind is not None and may_relate(newer, older)
        if typed:
            view.writable_row(older_id)
            # an untrusted note never supersedes, restates or joins a trusted one (or back)
            typed = same_provenance(view.note_of(newer).provenance, view.note_of(older).provenance)
    except NotFound:
        return None
    except PermissionDenied:
        typed = False
    tenant, user = view.scope.tenant, view.scope.user
    with view.vault.parts.db.session(tenant) as sess:
        if typed and kind is not None:
            written = put_relation(sess, tenant, user, newer.id, older.id, kind)
        else:
            return "link" if put_link(sess, tenant, user, newer.id, older.id, None) else None
    if not written:
        return None
    events = view.vault.parts.events
    if kind == "supersedes" and events is not None:  # after the commit: ids only, never text
        subject = {"user_id": user, "agent_id": view.scope.agent, "note_id": older.id}
        events(tenant, "memory.superseded", subject, {"superseded_by": newer.id})
    return kind
