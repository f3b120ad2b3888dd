"""Look-alike folding with Unicode's confusable skeleton (UTS #39), restricted to ASCII targets.

`data/confusables.txt` (Unicode's own data file, shipped with the package and read once) maps
each confusable character to its prototype: Cyrillic `а` → `a`, `р` → `p`, Greek `Ο` → `O`,
Cherokee `Ꭺ` → `A`. The screen's detectors read ASCII keywords and token shapes, so
`fold_confusables` applies the skeleton mapping to the characters that are not ASCII and whose
prototype is ASCII; ASCII itself is never rewritten (the full skeleton also maps `m` → `rn` and
`l` → `I`, which would break every ASCII detector). The result is a second view of the text
that the credential detectors read beside the text itself; what is stored is unchanged.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from importlib import resources

_DATA = "confusables.txt"


@cache
def confusable_table() -> dict[str, str]:
    """Non-ASCII character → its ASCII prototype (one or more characters), from UTS #39 data."""
    table: dict[str, str] = {}
    raw = resources.files("memvault.screening").joinpath("data", _DATA).read_text("utf-8-sig")
    for line in raw.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f.strip() for f in line.split(";")]
        if len(fields) < 2:
            continue
        source = "".join(chr(int(cp, 16)) for cp in fields[0].split())
        target = "".join(chr(int(cp, 16)) for cp in fields[1].split())
        if len(source) != 1 or source.isascii():
            continue
        target = unicodedata.normalize("NFKC", target)
        if target.isascii() and target.isprintable() and not target.isspace():
            table[source] = target
    return table


def fold_confusables(text: str) -> tuple[str, list[int], list[int]] | None:
    """`text` with non-ASCII look-alikes replaced by their ASCII prototypes, or None if none is.

    Returns the folded text and, for each of its characters, the start and end in `text` of
    the character it came from.
    """
    if text.isascii():
        return None
    table = confusable_table()
    if not any(ch in table for ch in text):
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for i, ch in enumerate(text):
        folded = table.get(ch, ch)
        out.append(folded)
        starts.extend([i] * len(folded))
        ends.extend([i + 1] * len(folded))
    return "".join(out), starts, ends
