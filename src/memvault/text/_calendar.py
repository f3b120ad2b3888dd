"""Calendar arithmetic for `dates`: `TimeRange`, the `Resolver` every rule resolves against, and
the `Rule` shape. A module of its own so the English rules (`dates`) and the Chinese ones
(`_dates_zh`) both build on it without importing each other."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

Granularity = Literal["day", "week", "month", "year"]


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open span of time `[start, end)` in epoch seconds (UTC).

    `granularity` is the unit the expression named ("8 May" → day, "last week" → week, "in
    May" → month, "2022年" → year), so a caller can weigh a match in a narrow range above one in
    a wide range. Weekends are day granularity spanning two days; "the past 3 days" is a day
    granularity window of four (three whole days and today).
    """

    start: float
    end: float
    granularity: Granularity = "day"

    def __contains__(self, ts: float) -> bool:
        return self.start <= ts < self.end


def _epoch(d: date) -> float:
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


_GRANULARITY: dict[str, Granularity] = {
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
}


class Resolver:
    """Calendar arithmetic relative to one UTC day; every method returns a `TimeRange`.

    Methods raise ValueError or OverflowError for impossible dates (31 February, year 0);
    `parse_time_ranges` drops those matches.
    """

    def __init__(self, today: date) -> None:
        self.today = today

    def days(self, first: date, count: int = 1) -> TimeRange:
        return TimeRange(_epoch(first), _epoch(first + timedelta(days=count)), "day")

    def day(self, year: int, month: int, day: int) -> TimeRange:
        return self.days(date(year, month, day))

    def days_ago(self, n: int) -> TimeRange:
        return self.days(self.today - timedelta(days=n))

    def week_of(self, d: date) -> TimeRange:
        monday = d - timedelta(days=d.weekday())
        return TimeRange(_epoch(monday), _epoch(monday + timedelta(days=7)), "week")

    def weeks_ago(self, n: int) -> TimeRange:
        return self.week_of(self.today - timedelta(weeks=n))

    def month(self, year: int, month: int) -> TimeRange:
        ny, nm = _add_months(year, month, 1)
        return TimeRange(_epoch(date(year, month, 1)), _epoch(date(ny, nm, 1)), "month")

    def months_ago(self, n: int) -> TimeRange:
        return self.month(*_add_months(self.today.year, self.today.month, -n))

    def year(self, year: int) -> TimeRange:
        return TimeRange(_epoch(date(year, 1, 1)), _epoch(date(year + 1, 1, 1)), "year")

    def years_ago(self, n: int) -> TimeRange:
        return self.year(self.today.year - n)

    def ago(self, n: int, unit: str) -> TimeRange:
        """The calendar day/week/month/year `n` units before today's."""
        if unit == "day":
            return self.days_ago(n)
        if unit == "week":
            return self.weeks_ago(n)
        if unit == "month":
            return self.months_ago(n)
        return self.years_ago(n)

    def past(self, n: int, unit: str) -> TimeRange:
        """The window "the past n units": from n units before today through the end of today."""
        end = self.today + timedelta(days=1)
        if unit in ("day", "week"):
            start = self.today - timedelta(days=n * (7 if unit == "week" else 1))
        else:
            y, m = _add_months(
                self.today.year, self.today.month, -n * (12 if unit == "year" else 1)
            )
            start = date(y, m, min(self.today.day, 28))
        return TimeRange(_epoch(start), _epoch(end), _GRANULARITY[unit])

    def named_month(self, month: int, which: str) -> TimeRange:
        """`month` of the year `which` picks: "recent" = latest not in the future, "last" =
        latest strictly before the current month, "this" = this year, "next" = next future."""
        year = self.today.year
        current = self.today.month
        if (which == "recent" and month > current) or (which == "last" and month >= current):
            year -= 1
        elif which == "next" and month <= current:
            year += 1
        return self.month(year, month)

    def recent_day(self, month: int, day: int) -> TimeRange:
        """`day` `month` without a year: this year's, or the latest earlier one if in the future."""
        for year in range(self.today.year, self.today.year - 8, -1):
            try:
                candidate = date(year, month, day)
            except ValueError:
                continue
            if candidate <= self.today:
                return self.days(candidate)
        raise ValueError(f"no such day: {month}/{day}")

    def weekday_before(self, weekday: int) -> TimeRange:
        """The most recent `weekday` (0 = Monday) strictly before today."""
        back = (self.today.weekday() - weekday) % 7 or 7
        return self.days_ago(back)

    def weekday_of_week(self, weeks_back: int, weekday: int) -> TimeRange:
        monday = self.today - timedelta(days=self.today.weekday(), weeks=weeks_back)
        return self.days(monday + timedelta(days=weekday))

    def weekend(self, weeks_back: int) -> TimeRange:
        monday = self.today - timedelta(days=self.today.weekday(), weeks=weeks_back)
        return self.days(monday + timedelta(days=5), 2)


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], Resolver], TimeRange | None]]
"""A pattern and what one of its matches means (None: not a date after all)."""
