"""The Chinese rules of `dates.parse_time_ranges`: 昨天, 上周三, 去年5月, 2022年5月8日, 三天前 ….

Kept apart so each module reads in one sitting. Numbers may be Arabic (5月8日) or Chinese up to
99 (五月八日, 十个月前, 两周前). Rules run after the English ones, most specific first, on text that
is NFKC-normalized (full-width digits are ASCII here) and lowercased.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memvault.text._calendar import Resolver, Rule, TimeRange

__all__ = ["ZH_RULES", "zh_number"]

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
           "八": 8, "九": 9}  # fmt: skip
_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_NUM = r"(?:[0-9]{1,2}|[零〇一二两三四五六七八九十]{1,3})"
_YEAR = r"(?<![0-9])(?P<y>[0-9]{4})\s*年\s*"
_WEEK = r"(?:周|星期|礼拜)"
# 一 of 一起 (together), 一直 (all along)… and 天 of 天气 (weather) are not weekdays: 上周一起去了.
_WD = r"(?P<wd>一(?![起直样些般定共切旦同下点])|[二三四五六]|日(?![常期子记])|天(?!气))"
_REL_YEAR = {"大前年": 3, "前年": 2, "去年": 1, "今年": 0, "明年": -1}
_REL_DAY = {"大前天": 3, "前天": 2, "昨天": 1, "昨日": 1, "今天": 0, "今日": 0, "明天": -1}
_WEEKS_BACK = {"上上": 2, "上": 1, "这": 0, "本": 0}
_MONTHS_BACK = {"上上个": 2, "上个": 1, "上": 1, "这个": 0, "这": 0, "本": 0}
_AGO_UNIT = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month",
             "年": "year"}  # fmt: skip


def zh_number(text: str) -> int:
    """An Arabic or Chinese number below 100 ("8", "八", "十", "十二", "二十", "三十一", "两")."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        if len(text) != 1:
            raise ValueError(f"not a number: {text!r}")
        return _DIGITS[text]
    tens, _, ones = text.partition("十")
    if len(tens) > 1 or len(ones) > 1 or "十" in ones:
        raise ValueError(f"not a number: {text!r}")
    return (_DIGITS[tens] if tens else 1) * 10 + (_DIGITS[ones] if ones else 0)


def _month_day(m: re.Match[str], r: Resolver) -> TimeRange | None:
    if m["tail"]:  # 5月8日前, 2022年5月以后: before/after a date is not supported
        return None
    month = zh_number(m["m"])
    if m["y"] is not None:
        year = int(m["y"])
    elif m["rel"] is not None:
        year = r.today.year - _REL_YEAR[m["rel"]]
    else:
        day = m["d"]
        return r.recent_day(month, zh_number(day)) if day else r.named_month(month, "recent")
    return r.day(year, month, zh_number(m["d"])) if m["d"] else r.month(year, month)


def _day_of_week(m: re.Match[str], r: Resolver) -> TimeRange:
    weeks_back = _WEEKS_BACK[m["w"]]
    return r.weekend(weeks_back) if m["end"] else r.weekday_of_week(weeks_back, _WEEKDAY[m["wd"]])


ZH_RULES: list[Rule] = [
    (
        # 2022年5月8日, 去年5月, 今年三月八号, 5月8日, 五月
        re.compile(r"(?:" + _YEAR + r"|(?P<rel>大前年|前年|去年|今年|明年)的?)?"
                   r"(?<![0-9个每上下这本])(?P<m>" + _NUM + r")\s*月份?"
                   r"(?:\s*(?P<d>" + _NUM + r")\s*[日号])?(?P<tail>[前后以之])?"),
        _month_day,
    ),
    (
        re.compile(_YEAR + r"(?![0-9]|前|后|以|之|代)"),
        lambda m, r: r.year(int(m["y"])),
    ),
    (
        re.compile(r"(?<![0-9])(?P<n>[0-9]{1,3}|[零〇一二两三四五六七八九十]{1,3})\s*个?\s*"
                   r"(?P<u>天|日|周|星期|礼拜|月|年)\s*[以之]?前"),
        lambda m, r: r.ago(zh_number(m["n"]), _AGO_UNIT[m["u"]]),
    ),
    (
        re.compile(r"(?P<rel>大前年|前年|去年|今年|明年)"),
        lambda m, r: r.years_ago(_REL_YEAR[m["rel"]]),
    ),
    (
        re.compile(r"(?<![以之提])(?P<rel>大前天|前天|昨天|昨日|今天|今日|明天)"),
        lambda m, r: r.days_ago(_REL_DAY[m["rel"]]),
    ),
    (
        re.compile(r"(?P<w>上上|上|这|本)个?" + _WEEK + r"(?:" + _WD + r"|(?P<end>末))"),
        _day_of_week,
    ),
    (
        re.compile(r"(?<![上下这本每个0-9一二两三四五六七八九十])" + _WEEK + _WD),
        lambda m, r: r.weekday_before(_WEEKDAY[m["wd"]]),
    ),
    (
        re.compile(r"(?P<w>上上|上|这|本)个?" + _WEEK),
        lambda m, r: r.weeks_ago(_WEEKS_BACK[m["w"]]),
    ),
    (
        re.compile(r"(?P<w>上上个|上个|上|这个|这|本)月"),
        lambda m, r: r.months_ago(_MONTHS_BACK[m["w"]]),
    ),
]  # fmt: skip
