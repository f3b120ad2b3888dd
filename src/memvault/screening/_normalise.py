"""Canonical text for the screen: what it scans is what gets stored.

`normalise` returns two views of one text, equal in length and aligned character for character:

- `text`, the form to store: invisible characters removed, then NFKC, except that full-width
  ASCII punctuation (`，：！？（）` …, the block U+FF01..U+FF5E), the ideographic space and the
  ellipsis `…` are kept as written, so Chinese prose keeps its punctuation (between two ASCII
  letters or digits, as in `ｇｈｐ＿ｘ`, the punctuation is folded like the rest);
- `scan`, what the detectors read: `text` with that punctuation and space folded to ASCII as well,
  i.e. NFKC throughout but for the ellipsis (`ｇｈｐ_…` reads `ghp_…`, `ｐａｓｓｗｏｒｄ：` reads
  `password:`).

Invisible characters are Unicode's default-ignorable code points: zero-width space, non-joiner
and joiner, word joiner, BOM, soft hyphen, bidi controls, variation selectors, tag characters,
Hangul fillers and the like. A few stay where they are part of the writing and cannot sit inside
anything a detector reads: a joiner inside an emoji sequence (👩‍💻), a (non-)joiner between two
letters of a script that needs them (Arabic, Indic, …), a variation selector after a symbol or in
a keycap (❤️, 1️⃣), and the tag characters of a subdivision flag (🏴 + `gbsct` + cancel tag).

Positions in both views map back to the input (`input_span`), so findings can index the text the
caller gave. Normalising a normalised text changes nothing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_FULLWIDTH_FIRST, _FULLWIDTH_LAST = 0xFF01, 0xFF5E
_FULLWIDTH_OFFSET = 0xFF01 - 0x21
_ELLIPSIS = "\u2026"
# kept as written in the stored text, read as the ASCII character in the scan view: full-width
# ASCII punctuation and the ideographic space (CJK prose); the ellipsis is kept in both views
_KEPT_PUNCTUATION: dict[int, str] = {
    **{
        cp: chr(cp - _FULLWIDTH_OFFSET)
        for cp in range(_FULLWIDTH_FIRST, _FULLWIDTH_LAST + 1)
        if not chr(cp - _FULLWIDTH_OFFSET).isalnum()
    },
    0x3000: " ",
    ord(_ELLIPSIS): _ELLIPSIS,
}
_FOLD_KEPT = str.maketrans(_KEPT_PUNCTUATION)

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties), every range of it
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_ZWNJ, _ZWJ = "\u200c", "\u200d"
_KEYCAP = "\u20e3"
_BLACK_FLAG = "\U0001f3f4"
_CANCEL_TAG = "\U000e007f"
# a subdivision flag: black flag, 2-6 tag letters/digits, cancel tag (🏴 gbsct)
_FLAG_TAGS = re.compile("\U0001f3f4([\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6})\U000e007f")
# scripts whose orthography uses ZWNJ/ZWJ between letters
_JOINING_SCRIPTS: tuple[tuple[int, int], ...] = (
    (0x0600, 0x08FF),  # Arabic, Syriac, Thaana, NKo, Samaritan, Mandaic, Arabic Extended
    (0x0900, 0x0DFF),  # Devanagari .. Sinhala
    (0x0F00, 0x109F),  # Tibetan, Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0xA8E0, 0xA8FF),  # Devanagari Extended
    (0xFB50, 0xFDFF),  # Arabic Presentation Forms-A
    (0xFE70, 0xFEFC),  # Arabic Presentation Forms-B
)


def _in_joining_script(ch: str) -> bool:
    cp = ord(ch)
    in_script = any(lo <= cp <= hi for lo, hi in _JOINING_SCRIPTS)
    return in_script and unicodedata.category(ch)[0] in "LM"


def _is_emoji_like(ch: str) -> bool:
    """A pictographic symbol, a skin-tone modifier or a variation selector (emoji sequences)."""
    return (ord(ch) > 0x7F and unicodedata.category(ch) in {"So", "Sk"}) or ch == "\ufe0f"


# characters that are not marks but whose NFKC form may compose with what precedes them:
# Hangul jamo (conjoining, compatibility and half-width), half-width kana voicing marks, Thai/Lao AM
_COMPOSING_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E33, 0x0E33),
    (0x0EB3, 0x0EB3),
    (0x1160, 0x11FF),
    (0x3131, 0x318E),
    (0xD7B0, 0xD7FF),
    (0xFF9E, 0xFF9F),
    (0xFFA0, 0xFFDC),
)


def _joins_previous(ch: str) -> bool:
    """A character NFKC may compose with what precedes it, so both are normalised together."""
    cp = ord(ch)
    if cp < 0x300:
        return False
    return unicodedata.category(ch)[0] == "M" or any(lo <= cp <= hi for lo, hi in _COMPOSING_RANGES)


@dataclass(frozen=True, slots=True)
class Normalised:
    """One text as the screen reads it (`scan`) and as it is stored (`text`), same length."""

    text: str
    scan: str
    _starts: tuple[int, ...] | None = field(default=None, repr=False)
    _ends: tuple[int, ...] | None = field(default=None, repr=False)

    @property
    def changed(self) -> bool:
        """True when `text` differs from the input."""
        return self._starts is not None

    def input_span(self, start: int, end: int) -> tuple[int, int]:
        """The input span that produced `text[start:end]` (`scan` has the same positions)."""
        if self._starts is None or self._ends is None:
            return start, end
        if start >= end:
            at = self._starts[start] if start < len(self._starts) else self._input_end()
            return at, at
        return self._starts[start], self._ends[end - 1]

    def _input_end(self) -> int:
        assert self._ends is not None
        return self._ends[-1] if self._ends else 0


def _kept_ignorable(text: str, i: int) -> bool:
    """Whether the default-ignorable character at `i` is part of the writing (see module doc)."""
    ch = text[i]
    prev = text[i - 1] if i > 0 else ""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if ch in (_ZWNJ, _ZWJ):
        if prev and nxt and _in_joining_script(prev) and _in_joining_script(nxt):
            return True
        return (
            ch == _ZWJ
            and bool(prev and nxt)
            and _is_emoji_like(prev)
            and _is_emoji_like(nxt)
            and nxt != "\ufe0f"
        )
    if "\ufe00" <= ch <= "\ufe0f":
        if nxt == _KEYCAP and prev in "0123456789#*":
            return True
        return bool(prev) and ord(prev) > 0x7F and unicodedata.category(prev) in {"So", "Sk"}
    return False


def _drop_ignorables(text: str) -> list[int]:
    """Indexes of the characters that survive: everything but the dropped ignorables."""
    dropped: set[int] = set()
    flag_spans: set[int] = set()
    for m in _FLAG_TAGS.finditer(text):
        flag_spans.update(range(m.start(1), m.end()))
    for m in _IGNORABLE.finditer(text):
        i = m.start()
        if i in flag_spans or _kept_ignorable(text, i):
            continue
        dropped.add(i)
    return [i for i in range(len(text)) if i not in dropped]


def normalise(text: str) -> Normalised:
    """The canonical form of `text`: invisible characters removed, NFKC, positions mapped back."""
    if text.isascii():
        return Normalised(text, text)
    if _IGNORABLE.search(text) is None and unicodedata.is_normalized("NFKC", text):
        return Normalised(text, text)
    stored, starts, ends = _normalise_once(text)
    if not unicodedata.is_normalized("NFKC", stored.translate(_FOLD_KEPT).replace(_ELLIPSIS, "")):
        # a composition across two pieces (not expected, but the result must be a fixed point)
        again, starts2, ends2 = _normalise_once(stored)
        starts = [starts[i] for i in starts2]
        ends = [ends[i - 1] for i in ends2]
        stored = again
    if stored == text:
        return Normalised(text, text.translate(_FOLD_KEPT))
    return Normalised(stored, stored.translate(_FOLD_KEPT), tuple(starts), tuple(ends))


def _normalise_once(text: str) -> tuple[str, list[int], list[int]]:
    """One pass: drop ignorables, NFKC per cluster; each output character's input span."""
    kept = _drop_ignorables(text)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    n = len(kept)
    k = 0
    while k < n:
        first = kept[k]
        ch = text[first]
        j = k + 1
        while j < n and _joins_previous(text[kept[j]]):
            j += 1
        if j > k + 1:
            out = unicodedata.normalize("NFKC", "".join(text[kept[m]] for m in range(k, j)))
        elif ord(ch) < 0x80 or ord(ch) in _KEPT_PUNCTUATION:
            out = ch
        else:
            out = unicodedata.normalize("NFKC", ch)
        pieces.append(out)
        starts.extend([first] * len(out))
        ends.extend([kept[j - 1] + 1] * len(out))
        k = j
    return _fold_between_ascii("".join(pieces)), starts, ends


def _fold_between_ascii(text: str) -> str:
    """Kept punctuation between two ASCII letters or digits is folded (`ghp＿x`, `42，second`):
    it belongs to Latin text there, not to CJK prose."""
    chars = list(text)
    for i in range(1, len(chars) - 1):
        fold = _KEPT_PUNCTUATION.get(ord(chars[i]))
        if fold is None or fold == _ELLIPSIS:
            continue
        before, after = text[i - 1], text[i + 1]
        if before.isascii() and before.isalnum() and after.isascii() and after.isalnum():
            chars[i] = fold
    return "".join(chars)


def fold_punctuation(text: str) -> str:
    """`text` with the full-width punctuation that `normalise` keeps read as ASCII (same length)."""
    return text.translate(_FOLD_KEPT)
