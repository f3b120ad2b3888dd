"""`parse_time_ranges` and `event_date_text`: every supported form, resolved against a fixed `now`.

`NOW` is Wednesday 2024-06-19 12:00 UTC. Expected ranges are written as
(first day, first day after the range, granularity).
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.text import tokenize
from memvault.text.dates import TimeRange, event_date_text, parse_time_ranges

NOW = datetime(2024, 6, 19, 12, tzinfo=UTC).timestamp()

Span = tuple[str, str, str]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat()


def spans(query: str, now: float = NOW) -> list[Span]:
    return [(_iso(r.start), _iso(r.end), r.granularity) for r in parse_time_ranges(query, now)]


def _at(year: int, month: int, day: int, hour: int = 12) -> float:
    return datetime(year, month, day, hour, tzinfo=UTC).timestamp()


ENGLISH = [
    ("yesterday", ("2024-06-18", "2024-06-19", "day")),
    ("What did I eat today?", ("2024-06-19", "2024-06-20", "day")),
    ("tomorrow", ("2024-06-20", "2024-06-21", "day")),
    ("the day before yesterday", ("2024-06-17", "2024-06-18", "day")),
    ("last week", ("2024-06-10", "2024-06-17", "week")),
    ("last month", ("2024-05-01", "2024-06-01", "month")),
    ("last year", ("2023-01-01", "2024-01-01", "year")),
    ("this week", ("2024-06-17", "2024-06-24", "week")),
    ("this month", ("2024-06-01", "2024-07-01", "month")),
    ("this year", ("2024-01-01", "2025-01-01", "year")),
    ("next week", ("2024-06-24", "2024-07-01", "week")),
    ("3 days ago", ("2024-06-16", "2024-06-17", "day")),
    ("three days ago", ("2024-06-16", "2024-06-17", "day")),
    ("a day ago", ("2024-06-18", "2024-06-19", "day")),
    ("a week ago", ("2024-06-10", "2024-06-17", "week")),
    ("two weeks ago", ("2024-06-03", "2024-06-10", "week")),
    ("a month ago", ("2024-05-01", "2024-06-01", "month")),
    ("twelve months ago", ("2023-06-01", "2023-07-01", "month")),
    ("10 months ago", ("2023-08-01", "2023-09-01", "month")),
    ("2 years ago", ("2022-01-01", "2023-01-01", "year")),
    ("the past 3 days", ("2024-06-16", "2024-06-20", "day")),
    ("over the past week", ("2024-06-12", "2024-06-20", "week")),
    ("in 2022", ("2022-01-01", "2023-01-01", "year")),
    ("during 1999", ("1999-01-01", "2000-01-01", "year")),
    ("in May", ("2024-05-01", "2024-06-01", "month")),
    ("in June", ("2024-06-01", "2024-07-01", "month")),
    ("in July", ("2023-07-01", "2023-08-01", "month")),
    ("in mid-March", ("2024-03-01", "2024-04-01", "month")),
    ("in Dec.", ("2023-12-01", "2024-01-01", "month")),
    ("last May", ("2024-05-01", "2024-06-01", "month")),
    ("last June", ("2023-06-01", "2023-07-01", "month")),
    ("this March", ("2024-03-01", "2024-04-01", "month")),
    ("next May", ("2025-05-01", "2025-06-01", "month")),
    ("May 2023", ("2023-05-01", "2023-06-01", "month")),
    ("sept, 2021", ("2021-09-01", "2021-10-01", "month")),
    ("early May 2023", ("2023-05-01", "2023-06-01", "month")),
    ("late May 2023", ("2023-05-01", "2023-06-01", "month")),
    ("8 May 2023", ("2023-05-08", "2023-05-09", "day")),
    ("the 8th of May, 2023", ("2023-05-08", "2023-05-09", "day")),
    ("May 8, 2023", ("2023-05-08", "2023-05-09", "day")),
    ("May 8th 2023", ("2023-05-08", "2023-05-09", "day")),
    ("on Monday, 8 May 2023", ("2023-05-08", "2023-05-09", "day")),
    ("on 8 May", ("2024-05-08", "2024-05-09", "day")),
    ("on December 25", ("2023-12-25", "2023-12-26", "day")),
    ("2023-05-08", ("2023-05-08", "2023-05-09", "day")),
    ("2023/05/08", ("2023-05-08", "2023-05-09", "day")),
    ("at 2023-05-08T10:00:00Z", ("2023-05-08", "2023-05-09", "day")),
    ("2023-05", ("2023-05-01", "2023-06-01", "month")),
    ("the week before 8 May 2023", ("2023-05-01", "2023-05-08", "week")),
    ("the week after 8 May 2023", ("2023-05-09", "2023-05-16", "week")),
    ("the day before May 8, 2023", ("2023-05-07", "2023-05-08", "day")),
    ("the day after 2023-05-08", ("2023-05-09", "2023-05-10", "day")),
    ("the month before May 8 2023", ("2023-04-01", "2023-05-01", "month")),
    ("the month after May 2023", ("2023-06-01", "2023-07-01", "month")),
    ("the week of 10 May 2023", ("2023-05-08", "2023-05-15", "week")),
    ("the week before last week", ("2024-06-03", "2024-06-10", "week")),
    ("last weekend", ("2024-06-15", "2024-06-17", "day")),
    ("this weekend", ("2024-06-22", "2024-06-24", "day")),
    ("last Monday", ("2024-06-17", "2024-06-18", "day")),
    ("on Monday", ("2024-06-17", "2024-06-18", "day")),
    ("last Wednesday", ("2024-06-12", "2024-06-13", "day")),
    ("on Thursday", ("2024-06-13", "2024-06-14", "day")),
    ("what did we discuss on Sunday's call", ("2024-06-16", "2024-06-17", "day")),
    ("ＭＡＹ ８, ２０２３", ("2023-05-08", "2023-05-09", "day")),
]

CHINESE = [
    ("今天", ("2024-06-19", "2024-06-20", "day")),
    ("昨天我做了什么", ("2024-06-18", "2024-06-19", "day")),
    ("前天", ("2024-06-17", "2024-06-18", "day")),
    ("大前天", ("2024-06-16", "2024-06-17", "day")),
    ("上周", ("2024-06-10", "2024-06-17", "week")),
    ("上星期", ("2024-06-10", "2024-06-17", "week")),
    ("上个星期", ("2024-06-10", "2024-06-17", "week")),
    ("上上周", ("2024-06-03", "2024-06-10", "week")),
    ("本周", ("2024-06-17", "2024-06-24", "week")),
    ("这周", ("2024-06-17", "2024-06-24", "week")),
    ("上个月", ("2024-05-01", "2024-06-01", "month")),
    ("上月", ("2024-05-01", "2024-06-01", "month")),
    ("这个月", ("2024-06-01", "2024-07-01", "month")),
    ("本月", ("2024-06-01", "2024-07-01", "month")),
    ("去年", ("2023-01-01", "2024-01-01", "year")),
    ("今年", ("2024-01-01", "2025-01-01", "year")),
    ("前年", ("2022-01-01", "2023-01-01", "year")),
    ("2022年", ("2022-01-01", "2023-01-01", "year")),
    ("2022年5月", ("2022-05-01", "2022-06-01", "month")),
    ("2022年5月份", ("2022-05-01", "2022-06-01", "month")),
    ("2022年5月8日", ("2022-05-08", "2022-05-09", "day")),
    ("２０２２年５月８号", ("2022-05-08", "2022-05-09", "day")),
    ("我2023年5月8日做了什么", ("2023-05-08", "2023-05-09", "day")),
    ("5月8日", ("2024-05-08", "2024-05-09", "day")),
    ("五月八日", ("2024-05-08", "2024-05-09", "day")),
    ("12月25日", ("2023-12-25", "2023-12-26", "day")),
    ("十二月二十五号", ("2023-12-25", "2023-12-26", "day")),
    ("5月", ("2024-05-01", "2024-06-01", "month")),
    ("7月", ("2023-07-01", "2023-08-01", "month")),
    ("去年5月", ("2023-05-01", "2023-06-01", "month")),
    ("去年五月八号", ("2023-05-08", "2023-05-09", "day")),
    ("今年三月", ("2024-03-01", "2024-04-01", "month")),
    ("三天前", ("2024-06-16", "2024-06-17", "day")),
    ("3天前", ("2024-06-16", "2024-06-17", "day")),
    ("两周前", ("2024-06-03", "2024-06-10", "week")),
    ("三个星期前", ("2024-05-27", "2024-06-03", "week")),
    ("十个月前", ("2023-08-01", "2023-09-01", "month")),
    ("2个月之前", ("2024-04-01", "2024-05-01", "month")),
    ("一年前", ("2023-01-01", "2024-01-01", "year")),
    ("2年前", ("2022-01-01", "2023-01-01", "year")),
    ("上周一", ("2024-06-10", "2024-06-11", "day")),
    ("上周三", ("2024-06-12", "2024-06-13", "day")),
    ("上周日", ("2024-06-16", "2024-06-17", "day")),
    ("上个星期天", ("2024-06-16", "2024-06-17", "day")),
    ("上礼拜五", ("2024-06-14", "2024-06-15", "day")),
    ("这周一", ("2024-06-17", "2024-06-18", "day")),
    ("周一", ("2024-06-17", "2024-06-18", "day")),
    ("星期三", ("2024-06-12", "2024-06-13", "day")),
    ("上周末", ("2024-06-15", "2024-06-17", "day")),
    ("我们上周一起去了公园", ("2024-06-10", "2024-06-17", "week")),
    ("这周天气很好", ("2024-06-17", "2024-06-24", "week")),
]

NO_TIME = [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint for the art show?",
    "How long has Caroline had her current group of friends for?",
    "Would Caroline still want to pursue counseling as a career?",
    "May I ask what Melanie likes?",
    "she may go to the park",
    "this may be the answer",
    "Page 8 may have it",
    "they march to the beat",
    "the march of progress",
    "wait a second",
    "the second time she sang",
    "what did Jan say in Jan's kitchen",
    "Did Mar see August's sister?",
    "05/08/2023",
    "8/5",
    "call 2023-555-1234",
    "it happened on Mondays",
    "3 days",
    "weekly meeting on the week",
    "",
    "卡罗琳什么时候去了支持小组？",
    "一周一次",
    "以前天天跑步",
    "每周一开会",
    "三个月",
    "2000年前",
]


@pytest.mark.parametrize(("query", "expected"), ENGLISH, ids=[q for q, _ in ENGLISH])
def test_parse_time_ranges_english_form_resolves_exactly(query: str, expected: Span) -> None:
    assert spans(query) == [expected]


@pytest.mark.parametrize(("query", "expected"), CHINESE, ids=[q for q, _ in CHINESE])
def test_parse_time_ranges_chinese_form_resolves_exactly(query: str, expected: Span) -> None:
    assert spans(query) == [expected]


@pytest.mark.parametrize("query", NO_TIME)
def test_parse_time_ranges_query_without_time_is_empty(query: str) -> None:
    assert parse_time_ranges(query, NOW) == []


@pytest.mark.parametrize(
    "query",
    ["1月1日前", "2022年5月以后", "二〇二二年", "summer 2023", "in two thousand and twenty"],
)
def test_parse_time_ranges_unsupported_form_is_empty(query: str) -> None:
    # Before/after a Chinese date, Chinese-numeral years, seasons, spelled-out years.
    assert parse_time_ranges(query, NOW) == []


def test_parse_time_ranges_modal_may_beside_real_date_keeps_only_the_date() -> None:
    assert spans("May I ask what she did on 8 May 2023? It may be there.") == [
        ("2023-05-08", "2023-05-09", "day")
    ]


def test_parse_time_ranges_several_expressions_in_query_order_without_duplicates() -> None:
    assert spans("yesterday or last week, 昨天, on 8 May 2023 or 2022年5月 去年") == [
        ("2024-06-18", "2024-06-19", "day"),
        ("2024-06-10", "2024-06-17", "week"),
        ("2023-05-08", "2023-05-09", "day"),
        ("2022-05-01", "2022-06-01", "month"),
        ("2023-01-01", "2024-01-01", "year"),
    ]


def test_parse_time_ranges_january_now_reaches_back_into_previous_year() -> None:
    now = _at(2024, 1, 3)  # a Wednesday
    assert spans("last month", now) == [("2023-12-01", "2024-01-01", "month")]
    assert spans("last week", now) == [("2023-12-25", "2024-01-01", "week")]
    assert spans("in December", now) == [("2023-12-01", "2024-01-01", "month")]
    assert spans("last January", now) == [("2023-01-01", "2023-02-01", "month")]
    assert spans("3 months ago", now) == [("2023-10-01", "2023-11-01", "month")]
    assert spans("上个月", now) == [("2023-12-01", "2024-01-01", "month")]


def test_parse_time_ranges_on_sunday_weeks_still_run_monday_to_sunday() -> None:
    now = _at(2024, 6, 23)  # a Sunday
    assert spans("this week", now) == [("2024-06-17", "2024-06-24", "week")]
    assert spans("last weekend", now) == [("2024-06-15", "2024-06-17", "day")]
    assert spans("on Sunday", now) == [("2024-06-16", "2024-06-17", "day")]
    assert spans("上周日", now) == [("2024-06-16", "2024-06-17", "day")]


def test_parse_time_ranges_resolves_in_utc_at_day_edges() -> None:
    just_before_midnight = datetime(2024, 6, 19, 23, 59, 59, tzinfo=UTC).timestamp()
    just_after_midnight = just_before_midnight + 2
    assert spans("today", just_before_midnight) == [("2024-06-19", "2024-06-20", "day")]
    assert spans("today", just_after_midnight) == [("2024-06-20", "2024-06-21", "day")]
    (today,) = parse_time_ranges("today", NOW)
    assert NOW in today
    assert today.end - today.start == 86_400


def test_parse_time_ranges_leap_day_without_year_is_the_last_real_one() -> None:
    assert spans("on 29 February", _at(2025, 3, 1)) == [("2024-02-29", "2024-03-01", "day")]
    assert spans("2月29日", _at(2025, 3, 1)) == [("2024-02-29", "2024-03-01", "day")]


@pytest.mark.parametrize(
    "query",
    ["31 February 2023", "2023-13-01", "2023年2月30日", "二十二月", "31 February", "2023-02-30"],
)
def test_parse_time_ranges_impossible_date_is_skipped(query: str) -> None:
    assert parse_time_ranges(query, NOW) == []


@pytest.mark.parametrize(
    "hostile",
    [
        "may " * 25_000,
        "1" * 100_000,
        "the week before " * 6_250,
        "2023-" * 20_000,
        "上" * 100_000,
        "十" * 50_000 + "月" * 50_000,
        "in " * 33_333,
        " " * 99_990 + "yesterday",
    ],
    ids=["may", "digits", "week-before", "iso-dashes", "shang", "shi-yue", "in", "late-date"],
)
def test_parse_time_ranges_hostile_100k_text_names_no_time(hostile: str) -> None:
    assert parse_time_ranges(hostile, NOW) == []


def test_parse_time_ranges_repeated_dates_collapse_to_one() -> None:
    assert spans("today " * 20_000) == [("2024-06-19", "2024-06-20", "day")]


def test_parse_time_ranges_reads_only_the_first_2000_characters() -> None:
    assert spans("yesterday " + "x" * 2_000 + " last year") == [("2024-06-18", "2024-06-19", "day")]


@pytest.mark.parametrize("now", [math.nan, math.inf, -math.inf, 1e20, -1e20])
def test_parse_time_ranges_unusable_now_is_empty(now: float) -> None:
    assert parse_time_ranges("yesterday", now) == []


def test_parse_time_ranges_at_calendar_limits_skips_unrepresentable_dates() -> None:
    last_day = datetime(9999, 12, 31, 12, tzinfo=UTC).timestamp()
    assert spans("yesterday", last_day) == [("9999-12-30", "9999-12-31", "day")]
    assert parse_time_ranges("today, tomorrow and next year", last_day) == []


def test_parse_time_ranges_non_string_query_is_empty() -> None:
    not_text: Any = None
    assert parse_time_ranges(not_text, NOW) == []


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_parse_time_ranges_any_text_gives_well_formed_ranges(text: str) -> None:
    for r in parse_time_ranges(text, NOW):
        assert isinstance(r, TimeRange)
        assert r.start < r.end
        assert r.granularity in ("day", "week", "month", "year")


def test_event_date_text_is_day_month_year() -> None:
    assert event_date_text(_at(2023, 5, 8, 23)) == "8 May 2023"
    assert event_date_text(_at(2023, 5, 8, 23), lang="zh") == "2023年5月8日"


def test_event_date_text_uses_the_utc_day() -> None:
    late = datetime(2023, 5, 8, 23, 30, tzinfo=UTC).timestamp()
    assert event_date_text(late) == "8 May 2023"
    assert event_date_text(late + 3_600) == "9 May 2023"


@pytest.mark.parametrize("ts", [math.nan, math.inf, 1e20])
def test_event_date_text_unusable_timestamp_is_empty(ts: float) -> None:
    assert event_date_text(ts) == ""


def test_event_date_text_tokens_keep_day_month_and_year() -> None:
    assert tokenize(event_date_text(_at(2023, 5, 8))) == ["8", "may", "2023"]
    assert tokenize(event_date_text(_at(2021, 3, 21))) == ["21", "march", "2021"]


@pytest.mark.parametrize(
    ("query", "shared"),
    [
        ("what happened in May 2023", {"may", "2023"}),
        ("on 8 May", {"8", "may"}),
        ("anything from 2023", {"2023"}),
        ("May 8th, 2023", {"may", "2023"}),
    ],
)
def test_event_date_text_shares_tokens_with_date_queries(query: str, shared: set[str]) -> None:
    note_tokens = set(tokenize(event_date_text(_at(2023, 5, 8))))
    assert set(tokenize(query)) & note_tokens == shared


@pytest.mark.parametrize(
    "query", ["in May 2023", "8 May 2023", "May 8th, 2023", "2023-05-08", "2023年5月", "2023年"]
)
def test_event_date_text_query_range_contains_the_event(query: str) -> None:
    ts = datetime(2023, 5, 8, 17, 45, tzinfo=UTC).timestamp()
    (found,) = parse_time_ranges(query, NOW)
    assert ts in found
    assert found.start <= ts < found.end


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2099, 12, 31)), st.integers(0, 86_399))
@settings(max_examples=300, deadline=None)
def test_event_date_text_round_trips_through_the_parser(day: date, second: int) -> None:
    ts = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() + second
    for lang in ("en", "zh"):
        (found,) = parse_time_ranges(event_date_text(ts, lang=lang), NOW)
        assert (found.granularity, found.start) == (
            "day",
            datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp(),
        )
        assert ts in found


def test_time_range_is_half_open() -> None:
    start = _at(2024, 6, 19, 0)
    r = TimeRange(start, start + 86_400, "day")
    assert start in r
    assert start + 86_400 not in r
    assert start - 1 not in r
