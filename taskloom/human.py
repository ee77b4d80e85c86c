"""Durations and times as the command line prints them to a person: "20 h 18 min",
"at 02:30 (Asia/Tokyo)", never "73112.2s"."""

from __future__ import annotations

import math
import time
from datetime import datetime
from zoneinfo import ZoneInfo


def duration(seconds: float) -> str:
    """A duration in the two largest units that matter: "12 ms", "4.2 s", "42 s",
    "5 min 3 s", "20 h 18 min", "3 d 4 h". Negative durations read as zero."""
    if not math.isfinite(seconds):
        return "forever"
    seconds = max(0.0, seconds)
    if seconds == 0:
        return "0 s"
    if seconds < 0.9995:  # a quick command's attempt: "12 ms", not "0 s"
        return f"{max(1, round(seconds * 1000))} ms"
    if seconds < 10:
        text = f"{seconds:.1f}"
        return f"{text[:-2] if text.endswith('.0') else text} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    units = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
    for index, (name, size) in enumerate(units[:-1]):
        if whole >= size:
            amount, rest = divmod(whole, size)
            small_name, small_size = units[index + 1]
            small = rest // small_size
            return f"{amount} {name}" + (f" {small} {small_name}" if small else "")
    return f"{whole} s"  # not reached


def clock_time(wall: float, zone: str | None = None, now: float | None = None) -> str:
    """A wall time (epoch seconds) as a person reads it: "02:30 (Asia/Tokyo)" in the
    task's zone when it has one, else local time with its abbreviation ("14:05
    CET"); the date is added when it is not today there."""
    tz = ZoneInfo(zone) if zone else None
    # To the nearest second: a time read back through a monotonic clock is a hair off
    # (02:29:59.9996 is the 02:30 occurrence).
    moment = datetime.fromtimestamp(round(wall), tz).astimezone(tz)
    today = datetime.fromtimestamp(time.time() if now is None else now, tz).astimezone(tz).date()
    text = moment.strftime("%H:%M" if moment.second == 0 else "%H:%M:%S")
    if moment.date() != today:
        text = moment.strftime("%Y-%m-%d ") + text
    return f"{text} ({zone})" if zone else f"{text} {moment.strftime('%Z')}".rstrip()


def iso(wall: float | None) -> str | None:
    """Local ISO 8601 with the offset, as every ``--json`` answer gives times."""
    if wall is None:
        return None
    return datetime.fromtimestamp(round(wall)).astimezone().isoformat(timespec="seconds")
