"""An Obsidian-compatible review batch for the notes the quality scan flagged.

The document is built only from the notes it is given. Note text is untrusted: every line of
it is quoted (`> `) and escaped so that nothing in it (front-matter fences, headings, tasks,
wiki links, tags, HTML, code fences, Obsidian comments or highlights) can change the document's
structure or add a checkbox; the scope label goes into the front matter as a quoted YAML string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from memvault.amem.quality import QualityFlag
from memvault.amem.views import NoteView

DOCUMENT_TYPE = "memvault-review"
ACTIONS: tuple[str, ...] = ("keep", "delete", "edit")
"""The checkbox tasks of every section, in order."""

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\u00a0": "&nbsp;"}  # a parser trims U+00A0
# ASCII punctuation that means something inline in CommonMark or Obsidian: emphasis, code,
# links and wiki links, embeds, tags, tables, strikethrough, highlights, comments, math,
# block references, footnotes. A backslash before any ASCII punctuation is a literal.
_INLINE = set("\\`*_[]#|~=%$^!{}")
# Characters that open a block only at the start of a line: list items, setext underlines.
_LINE_START = set("-+")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")
# Controls (except tab), bidi overrides/isolates (they reorder what a reviewer reads) and lone
# surrogates (not encodable as UTF-8).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_TAG_CHARS = re.compile(r"[^a-z0-9_-]+")
_SAFE_ID = re.compile(r"[A-Za-z0-9._:@/+=-]+")


def review_markdown(
    flagged: Sequence[tuple[NoteView, QualityFlag]], *, generated_at: float, scope_label: str
) -> str:
    """A markdown review batch for `flagged` (note, flag) pairs, in the order given.

    Layout: YAML front matter (`type: memvault-review`, `generated` as ISO 8601 UTC, `count`,
    `scope`), a title, then per note a `## N. <id>` section with the id, the created date, the
    reasons as tags (`#too_short`), the tasks `- [ ] keep`, `- [ ] delete`, `- [ ] edit`, and
    the note's text as a block quote (every line prefixed with `> `, escaped). A note given
    twice appears once. A flag whose `note_id` is not its note's id raises `ValueError`.
    """
    pairs: list[tuple[NoteView, QualityFlag]] = []
    seen: set[str] = set()
    for note, flag in flagged:
        if flag.note_id != note.id:
            raise ValueError("a quality flag was paired with another note")
        if note.id not in seen:
            seen.add(note.id)
            pairs.append((note, flag))

    label = _inline(scope_label)
    lines = [
        "---",
        f"type: {DOCUMENT_TYPE}",
        f"generated: {_iso(generated_at)}",
        f"count: {len(pairs)}",
        f"scope: {json.dumps(_UNSAFE.sub('', scope_label), ensure_ascii=True)}",
        "---",
        "",
        f"# Memory review: {label}" if label else "# Memory review",
        "",
        f"{len(pairs)} note(s) to review. Tick one task per note.",
    ]
    for number, (note, flag) in enumerate(pairs, start=1):
        note_id = _identifier(note.id)
        tags = " ".join(f"#{_tag(reason)}" for reason in flag.reasons if _tag(reason))
        lines += [
            "",
            f"## {number}. {note_id}",
            "",
            f"id: {note_id}  ",
            f"created: {_iso(note.created_at)}  ",
            f"reasons: {tags}" if tags else "reasons: (none)",
            "",
            *(f"- [ ] {action}" for action in ACTIONS),
            "",
            *_quote(note.text),
        ]
    return "\n".join(lines) + "\n"


def escape_line(line: str) -> str:
    """One line of untrusted text as literal markdown: HTML characters as entities, inline
    markup characters backslash-escaped, a block marker at the line start neutralised."""
    line = _UNSAFE.sub("\ufffd", line).rstrip(" \t")  # trailing spaces would be a hard break
    out = "".join(_HTML.get(ch) or (f"\\{ch}" if ch in _INLINE else ch) for ch in line)
    stripped = out.lstrip(" \t")
    indent = out[: len(out) - len(stripped)]
    if stripped[:1] in _LINE_START:
        stripped = "\\" + stripped
    else:
        ordered = _ORDERED.match(stripped)
        if ordered:
            stripped = ordered.group(1) + "\\" + stripped[len(ordered.group(1)) :]
    # Leading spaces would make an indented code block (and a parser trims them): keep them as
    # no-break space entities, which are decoded only after the block structure is read.
    return indent.replace(" ", "&nbsp;").replace("\t", "&nbsp;" * 4) + stripped


def _quote(text: str) -> list[str]:
    """`text` as block-quote lines; an empty text is a quoted `(empty)` marker."""
    if not text.strip():
        return ["> *(empty)*"]
    return [f"> {escape_line(line)}" if line.strip() else ">" for line in text.splitlines()]


def _inline(text: str) -> str:
    """A single-line, escaped rendering of a short untrusted string (line breaks → spaces)."""
    return escape_line(" ".join(text.split())) if text.strip() else ""


def _identifier(note_id: str) -> str:
    """A note id as inline code when it is a plain identifier, else escaped text."""
    if _SAFE_ID.fullmatch(note_id):
        return f"`{note_id}`"
    return _inline(note_id) or "\\(no id\\)"


def _tag(reason: str) -> str:
    """An Obsidian tag name for a reason code: lowercase letters, digits, `_` and `-` only."""
    return _TAG_CHARS.sub("_", reason.strip().lower()).strip("_")


def _iso(timestamp: float) -> str:
    """Epoch seconds as `YYYY-MM-DDTHH:MM:SSZ`; `unknown` when not representable."""
    try:
        moment = datetime.fromtimestamp(timestamp, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return "unknown"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
