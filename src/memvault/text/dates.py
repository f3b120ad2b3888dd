"""Time-aware queries: the date ranges a search names, and the date words a note's text carries.

`parse_time_ranges("what did I do last week?", now)` finds every date or relative-time expression
(English and Chinese) and resolves it against `now`; search boosts notes whose `occurred_at` falls
inside a range. `event_date_text(occurred_at)` is the "8 May 2023" appended to a note's BM25 text so
date words in a query ("in May 2023", "on 8 May", "2023") share tokens with the note.

Everything resolves in UTC: "yesterday" is the UTC day before the UTC day holding `now`. Weeks run
Monday to Sunday. The parser is conservative: month names that are also ordinary words ("may",
"march", "jan") count only next to a day or a year, or after in/during/of/last/this/next/early/
mid/late, so "May I ask…" and "they march" name no time; numeric dates other than year-first
(05/08/2023 is month-first in the US, day-first elsewhere) are skipped.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Literal

from memvault.text._calendar import Granularity, Resolver, Rule, TimeRange, _add_months
from memvault.text._dates_zh import ZH_RULES

__all__ = ["Granularity", "TimeRange", "event_date_text", "parse_time_ranges"]

MAX_QUERY_CHARS = 2_000
"""Only this many leading characters of a query are scanned: the work per query is bounded."""


_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH_NAMES = [m.capitalize() for m in list(_MONTHS)[:12]]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?:\.|(?![\w']))"
_DAY = r"(?P<day>3[01]|[12][0-9]|0?[1-9])(?:st|nd|rd|th)?(?![\w:])"
_YEAR = r"(?P<year>(?:19|20)[0-9]{2})(?![\w])"
_WD = r"(?:(?:" + "|".join(_WEEKDAYS) + r"),?\s+)?"
_NUM = r"(?P<n>[0-9]{1,4}|" + "|".join(_NUMBER_WORDS) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?\b"
_START = r"(?<![\w'])"

# After "may" without a day or year these words make it the verb: "this may be", "it may not".
_MODAL_FOLLOWERS = re.compile(
    r"\s+(?:be|been|have|not|also|well|still|never|just|only|help|need|want|seem|cause|take|"
    r"make|get|go|come|lead|result|happen|include|require|mean|affect|vary|change|become|"
    r"sound|look|feel|work|even|really|already|actually)\b"
)


def _month_of(match: re.Match[str]) -> int:
    return _MONTHS[match.group("mon")]


def _is_modal(match: re.Match[str]) -> bool:
    return match.group("mon") == "may" and bool(_MODAL_FOLLOWERS.match(match.string, match.end()))


def _full_date(m: re.Match[str], r: Resolver) -> TimeRange | None:
    month, day = _month_of(m), int(m.group("day"))
    if m.group("year"):
        return r.day(int(m.group("year")), month, day)
    return None if _is_modal(m) else r.recent_day(month, day)


def _context_month(m: re.Match[str], r: Resolver) -> TimeRange | None:
    if _is_modal(m):
        return None
    ctx = m.group("ctx")
    which = ctx if ctx in ("last", "this", "next") else "recent"
    return r.named_month(_month_of(m), which)


def _count(m: re.Match[str]) -> int:
    raw = m.group("n")
    return _NUMBER_WORDS[raw] if raw in _NUMBER_WORDS else int(raw)


_RELATIVE_DAYS = {"today": 0, "tonight": 0, "yesterday": 1, "tomorrow": -1}
_WHICH_WEEK = {"last": 1, "past": 1, "this past": 1, "this": 0, "next": -1}

EN_RULES: list[Rule] = [
    (
        re.compile(r"(?<![\w./-])(?P<y>(?:19|20)[0-9]{2})(?P<sep>[-/.])(?P<m>[0-9]{1,2})(?P=sep)"
                   r"(?P<d>[0-9]{1,2})(?![0-9]|[-/.][0-9])"),
        lambda m, r: r.day(int(m["y"]), int(m["m"]), int(m["d"])),
    ),
    (
        re.compile(r"(?<![\w./-])(?P<y>(?:19|20)[0-9]{2})-(?P<m>[0-9]{1,2})(?![0-9]|[-/.][0-9])"),
        lambda m, r: r.month(int(m["y"]), int(m["m"])),
    ),
    (
        re.compile(_START + _WD + r"(?:the\s+)?" + _DAY + r"(?:\s+of)?\s+" + _MON
                   + r"(?:,?\s+" + _YEAR + r")?"),
        _full_date,
    ),
    (
        re.compile(_START + _WD + _MON + r"\s+(?:the\s+)?" + _DAY + r"(?:,?\s+" + _YEAR + r")?"),
        _full_date,
    ),
    (
        re.compile(_START + r"(?:(?:early|mid|late)[\s-]+)?" + _MON + r",?\s+" + _YEAR),
        lambda m, r: r.month(int(m["year"]), _month_of(m)),
    ),
    (
        re.compile(r"\b(?P<ctx>in|during|of|last|this|next|early|mid|late)[\s-]+" + _MON),
        _context_month,
    ),
    (
        re.compile(r"\b(?:in|during|of|throughout|early|mid|late|year)[\s-]+" + _YEAR),
        lambda m, r: r.year(int(m["year"])),
    ),
    (
        re.compile(r"\b(?P<w>today|tonight|yesterday|tomorrow)\b"),
        lambda m, r: r.days_ago(_RELATIVE_DAYS[m["w"]]),
    ),
    (
        re.compile(r"\b" + _NUM + r"\s+" + _UNIT + r"\s+ago\b"),
        lambda m, r: r.ago(_count(m), m["unit"]),
    ),
    (
        re.compile(r"\b(?:past|last)\s+" + _NUM + r"\s+" + _UNIT),
        lambda m, r: r.past(_count(m), m["unit"]) if m["n"] not in ("a", "an") else None,
    ),
    (
        re.compile(r"\b(?P<w>last|this\s+past|past|this|next)\s+weekend\b"),
        lambda m, r: r.weekend(_WHICH_WEEK[" ".join(m["w"].split())]),
    ),
    (
        re.compile(r"\bpast\s+(?P<unit>day|week|month|year)\b"),
        lambda m, r: r.past(1, m["unit"]),
    ),
    (
        re.compile(r"\b(?P<w>last|this|next)\s+(?P<unit>week|month|year)\b"),
        lambda m, r: r.ago(_WHICH_WEEK[m["w"]], m["unit"]),
    ),
    (
        re.compile(r"\b(?:on|last|this\s+past|past)\s+(?P<wd>" + "|".join(_WEEKDAYS) + r")\b"),
        lambda m, r: r.weekday_before(_WEEKDAYS.index(m["wd"])),
    ),
]  # fmt: skip

# "the week before <date>", "the day after <date>", "the week of <date>": shifts what follows.
_SHIFT_PREFIX = re.compile(
    r"(?:\b(?:the|a|one)\s+)?\b(?P<unit>day|week|month)\s+(?P<dir>before|after|of)\s+$"
)
_SHIFT_LOOKBACK = 32
_MASK = "\x00"


def _shift(base: TimeRange, unit: str, direction: str) -> TimeRange | None:
    if unit == "month":
        anchor = datetime.fromtimestamp(base.start, UTC).date()
        if direction == "of":
            return Resolver(anchor).month(anchor.year, anchor.month)
        delta = -1 if direction == "before" else 1
        return Resolver(anchor).month(*_add_months(anchor.year, anchor.month, delta))
    if unit == "week" and direction == "of":
        anchor = datetime.fromtimestamp(base.start, UTC).date()
        return Resolver(anchor).week_of(anchor)
    if direction == "of":
        return None
    length = 86_400.0 * (7 if unit == "week" else 1)
    granularity: Granularity = "week" if unit == "week" else "day"
    if direction == "before":
        return TimeRange(base.start - length, base.start, granularity)
    return TimeRange(base.end, base.end + length, granularity)


def parse_time_ranges(query: str, now: float) -> list[TimeRange]:
    """Every date or relative-time expression in `query`, resolved against `now` (epoch seconds).

    Ranges come in the order their expressions appear, without duplicates; `[]` when the query
    names no time. Resolution is in UTC, weeks run Monday to Sunday, and a date without a year
    ("8 May", "5月8日", "in May") is the most recent one not in the future. Only the first
    `MAX_QUERY_CHARS` characters are read; any input (hostile text, a non-finite `now`) returns
    a list rather than raising.
    """
    if not isinstance(query, str) or not math.isfinite(now):
        return []
    try:
        today = datetime.fromtimestamp(now, UTC).date()
    except (OverflowError, OSError, ValueError):
        return []
    text = unicodedata.normalize("NFKC", query[:MAX_QUERY_CHARS])[:MAX_QUERY_CHARS]
    text = text.lower().replace("’", "'").replace(_MASK, " ")
    resolver = Resolver(today)
    found: list[tuple[int, TimeRange]] = []
    for pattern, resolve in (*EN_RULES, *ZH_RULES):
        for match in pattern.finditer(text):
            # Mask even a rejected match ("8 may be"): a less specific rule must not reread it.
            start = match.start()
            try:
                result = resolve(match, resolver)
                prefix = _SHIFT_PREFIX.search(text, max(0, start - _SHIFT_LOOKBACK), start)
                if result is not None and prefix is not None:
                    shifted = _shift(result, prefix["unit"], prefix["dir"])
                    if shifted is not None:
                        result, start = shifted, prefix.start()
            except (ValueError, OverflowError, KeyError):
                result = None
            if result is not None:
                found.append((start, result))
            text = text[:start] + _MASK * (match.end() - start) + text[match.end() :]
    ranges: list[TimeRange] = []
    for _, found_range in sorted(found, key=lambda item: item[0]):
        if found_range not in ranges:
            ranges.append(found_range)
    return ranges


def event_date_text(ts: float, *, lang: Literal["en", "zh"] = "en") -> str:
    """The date words for an event at `ts` (epoch seconds, UTC day), added to a note's BM25 text.

    English: "8 May 2023" — tokenized as `8`, `may`, `2023`, the tokens of "in May 2023", "on 8
    May" and "2023". `lang="zh"`: "2023年5月8日" (tokens `2023 年 5 月 8 日`). `""` for a
    timestamp that is not a date (NaN, out of range).
    """
    if not math.isfinite(ts):
        return ""
    try:
        d = datetime.fromtimestamp(ts, UTC).date()
    except (OverflowError, OSError, ValueError):
        return ""
    if lang == "zh":
        return f"{d.year}年{d.month}月{d.day}日"
    return f"{d.day} {_MONTH_NAMES[d.month - 1]} {d.year}"
