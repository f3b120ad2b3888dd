"""Views of one text for the credential detectors: escapes decoded, look-alikes folded.

A view is a derived text plus, for each of its characters, the span of the text it came from,
so a finding in any view maps back to the text the scanner was given. The scanner reads the
text itself, then (only when they differ from it) the escape-decoded text, the look-alike
folded text, and both: `\\x67\\x68\\x70_…`, `%67%68%70_…`, `&#x67;&#104;p_…`, `=67=68=70_…`
and `ghр_…` with a Cyrillic `р` all read `ghp_…` to the token patterns.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from memvault.screening._confusables import fold_confusables


@dataclass(frozen=True, slots=True)
class View:
    """A derived text; `starts[i]`/`ends[i]` is the span of the original behind character i."""

    text: str
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span behind `text[start:end]`."""
        if self.starts is None or self.ends is None:
            return start, end
        if end <= start:
            at = (
                self.starts[start]
                if start < len(self.starts)
                else (self.ends[-1] if self.ends else 0)
            )
            return at, at
        return self.starts[start], self.ends[end - 1]

    def then(self, text: str, starts: list[int], ends: list[int]) -> View:
        """A view of this view's text, as a view of the original."""
        if self.starts is None or self.ends is None:
            return View(text, tuple(starts), tuple(ends))
        return View(
            text,
            tuple(self.starts[s] for s in starts),
            tuple(self.ends[e - 1] if e > 0 else 0 for e in ends),
        )


# \xNN, \uNNNN, \U0001NNNN, %NN, &#NN; &#xNN; &name;, and runs of quoted-printable (=NN=NN…)
_ESCAPE = re.compile(
    r"\\x(?P<x>[0-9A-Fa-f]{2})|\\u(?P<u>[0-9A-Fa-f]{4})|\\U(?P<U>[0-9A-Fa-f]{8})|"
    r"%(?P<pct>[0-9A-Fa-f]{2})|&#(?P<dec>\d{1,7});?|&#[xX](?P<hex>[0-9A-Fa-f]{1,6});?|"
    r"(?P<ent>&[A-Za-z][A-Za-z0-9]{1,31};)|(?P<qp>(?:=[0-9A-F]{2}|=\r?\n){2,})"
)
# a text with this many `=NN` bytes is quoted-printable throughout: a lone `=3D` is decoded too
_QP_TEXT_BYTES = 8
_QP_BYTES = re.compile(r"=[0-9A-F]{2}")
_ESCAPE_QP_TEXT = re.compile(_ESCAPE.pattern.replace(r"|=\r?\n){2,})", r"|=\r?\n){1,})"))
_ESCAPE_HINT = re.compile(r"\\[xuU]|%[0-9A-Fa-f]{2}|&#?\w|=[0-9A-F]{2}")
_QP_BYTE = re.compile(r"=([0-9A-F]{2})|=\r?\n")


def _code_point(value: int) -> str | None:
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        return None
    return chr(value)


def _decode_one(m: re.Match[str]) -> list[tuple[str, int, int]] | None:
    """(decoded piece, start, end in the text) for one escape, or None to keep it as written."""
    for name, base in (("x", 16), ("u", 16), ("U", 16), ("pct", 16), ("dec", 10), ("hex", 16)):
        raw = m.group(name)
        if raw is not None:
            ch = _code_point(int(raw, base))
            return None if ch is None else [(ch, m.start(), m.end())]
    if (entity := m.group("ent")) is not None:
        decoded = html.unescape(entity)
        return None if decoded == entity else [(decoded, m.start(), m.end())]
    pieces: list[tuple[str, int, int]] = []
    data = bytearray()
    first = m.start()
    for b in _QP_BYTE.finditer(m.group(0)):
        if b.group(1) is not None:
            data.append(int(b.group(1), 16))
    text = data.decode("utf-8", errors="replace")
    # each decoded character is attributed to the whole run (quoted-printable is byte-level)
    pieces.extend((ch, first, m.end()) for ch in text)
    return pieces


def decode_escapes(text: str) -> tuple[str, list[int], list[int]] | None:
    """`text` with escapes decoded, and each character's span in `text`; None when none is."""
    if _ESCAPE_HINT.search(text) is None:
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    cursor = 0
    changed = False
    qp_text = len(_QP_BYTES.findall(text)) >= _QP_TEXT_BYTES
    for m in (_ESCAPE_QP_TEXT if qp_text else _ESCAPE).finditer(text):
        pieces = _decode_one(m)
        if pieces is None:
            continue
        for i in range(cursor, m.start()):
            out.append(text[i])
            starts.append(i)
            ends.append(i + 1)
        for piece, s, e in pieces:
            out.append(piece)
            starts.extend([s] * len(piece))
            ends.extend([e] * len(piece))
        cursor = m.end()
        changed = True
    if not changed:
        return None
    for i in range(cursor, len(text)):
        out.append(text[i])
        starts.append(i)
        ends.append(i + 1)
    return "".join(out), starts, ends


def views(text: str) -> list[View]:
    """The text, then its decoded, folded, and decoded-then-folded views where they differ."""
    found = [View(text)]
    decoded = decode_escapes(text)
    if decoded is not None:
        found.append(found[0].then(*decoded))
        again = decode_escapes(decoded[0])  # %5Cx67: an escape inside an escape
        if again is not None:
            found.append(found[-1].then(*again))
    for view in list(found):
        folded = fold_confusables(view.text)
        if folded is not None:
            found.append(view.then(*folded))
    return found
