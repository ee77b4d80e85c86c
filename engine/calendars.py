"""Days a recurring task leaves out: ``skip = ["2026-12-24", "2026-12-25..2026-12-26"]``
on a task, or ``calendar = "holidays.toml"`` (a file with such a ``skip`` list, shared).

``parse_days(items)`` turns the strings (or TOML dates) into sorted, merged
``(first, last)`` date ranges, ``ValueError`` naming a bad one; ``read_calendar(path)``
reads a calendar file's list. ``SkipDays(ranges, tz)`` answers whether a moment falls
on a skipped day, the day read in zone ``tz`` (a cron task's zone), and where the
skipped stretch holding it ends. The recurrences (``_schedule/recurrence.py``) use it
to leave those occurrences out.
"""

from __future__ import annotations

import bisect
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

Range = tuple[date, date]


def parse_day(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a date like '2026-12-24'") from None


def parse_days(items) -> tuple[Range, ...]:
    """Dates and ``FIRST..LAST`` ranges (both days in) as sorted, merged ranges."""
    ranges: list[Range] = []
    for item in items:
        if isinstance(item, datetime):
            raise ValueError(f"{item.isoformat()!r} is a date and time: give a date")
        if isinstance(item, date):
            ranges.append((item, item))
            continue
        if not isinstance(item, str):
            raise ValueError(f"{item!r} is not a date string like '2026-12-24'")
        first, dots, last = item.partition("..")
        start = parse_day(first)
        end = parse_day(last) if dots else start
        if end < start:
            raise ValueError(f"{item!r} ends before it begins")
        ranges.append((start, end))
    ranges.sort()
    merged: list[Range] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1] + timedelta(days=1):
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return tuple(merged)


def format_range(item: Range) -> str:
    first, last = item
    return first.isoformat() if first == last else f"{first.isoformat()}..{last.isoformat()}"


def read_calendar(path) -> list:
    """The ``skip`` list of a calendar file (TOML); ``OSError`` if it cannot be read,
    ``ValueError`` (with line and column for TOML syntax) for one that is wrong."""
    import tomllib

    data = Path(path).read_bytes()
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"TOML syntax error: {exc}") from None
    unknown = [key for key in table if key != "skip"]
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}: a calendar has only skip = [...]")
    skip = table.get("skip", [])
    if not isinstance(skip, list):
        raise ValueError("skip must be a list of dates and ranges")
    return skip


class SkipDays:
    """Skipped days (merged ranges), each day read in zone ``tz``."""

    __slots__ = ("ranges", "tz", "_zone", "_starts")

    def __init__(self, ranges: tuple[Range, ...], tz: str = "UTC") -> None:
        from .cron import zone

        self.ranges = parse_days(ranges_as_text(ranges))
        self.tz = tz
        self._zone = zone(tz)
        self._starts = [start for start, _ in self.ranges]

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __eq__(self, other) -> bool:
        if not isinstance(other, SkipDays):
            return NotImplemented
        return (self.ranges, self.tz) == (other.ranges, other.tz)

    def __hash__(self) -> int:
        return hash((self.ranges, self.tz))

    def __repr__(self) -> str:
        return f"SkipDays({[format_range(r) for r in self.ranges]!r}, {self.tz!r})"

    def range_of(self, moment: datetime) -> Range | None:
        """The skipped range holding ``moment``'s day (in the zone), or None."""
        day = moment.astimezone(self._zone).date()
        at = bisect.bisect_right(self._starts, day) - 1
        if at >= 0 and self.ranges[at][0] <= day <= self.ranges[at][1]:
            return self.ranges[at]
        return None

    def skips(self, moment: datetime) -> bool:
        return self.range_of(moment) is not None

    def resumes(self, moment: datetime) -> datetime | None:
        """When the skipped stretch holding ``moment`` ends (midnight after its last
        day, in the zone, as UTC), or None when ``moment`` is not skipped."""
        found = self.range_of(moment)
        if found is None:
            return None
        after = datetime.combine(found[1] + timedelta(days=1), time(), self._zone)
        return after.astimezone(UTC)


def ranges_as_text(ranges) -> list:
    """Ranges (pairs of dates) or items as a file writes them, as ``parse_days`` reads."""
    result = []
    for item in ranges:
        if isinstance(item, tuple) and len(item) == 2:
            result.append(format_range(item))
        else:
            result.append(item)
    return result
