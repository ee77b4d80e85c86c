"""Durations as people write them: "250ms", "90s", "5m", "2h", "1h30m", or plain seconds,
and in systemd's spellings too ("30 sec", "5 min", "2 hours", "1 day", "1w", "1 week 2d").

``parse_duration`` turns any of those into float seconds; ``format_duration`` gives
the shortest string that parses back to exactly the same number. Durations are
finite and at most ``MAX_DURATION`` (100 years) either way: longer ones are typos,
and the engine's timers cannot wait that long.
"""

from __future__ import annotations

import math
import re

# Unit -> seconds. Milliseconds divide instead of multiply so "100ms" is exactly 0.1.
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": None}
# systemd.time(7)'s spellings (and a few plurals it also takes), read as our units;
# "w" is a week. Months and years are left out: their length is not one number.
_SPELLINGS = {
    "ms": "ms", "msec": "ms", "msecs": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d",
    "w": "w", "week": "w", "weeks": "w",
}  # fmt: skip
_WEEK = 7 * 86400
_PART = re.compile(
    r"(\d+(?:\.\d*)?|\.\d+)(" + "|".join(sorted(_SPELLINGS, key=len, reverse=True)) + r")(?![a-z])"
)
MAX_DURATION = 100 * 365.25 * 86400  # seconds in 100 years
_NUMBER = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def parse_duration(value) -> float:
    """Seconds from a number or a string like "90s", "1h30m", "250ms", "1.5h", "-5s".

    A bare numeric string is seconds. Raises ``ValueError`` naming the bad value.
    """
    if isinstance(value, bool):
        raise ValueError(f"bad duration {value!r}: expected seconds or a string like '90s'")
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:  # an int too large for a float
            seconds = math.inf
        return _bounded(value, seconds)
    if not isinstance(value, str):
        raise ValueError(
            f"bad duration {value!r}: expected seconds or a string like '90s', "
            f"got {type(value).__name__}"
        )
    text = value.strip().lower().replace(" ", "")
    if _NUMBER.fullmatch(text):
        return _bounded(value, float(text))
    sign = -1.0 if text.startswith("-") else 1.0
    body = text[1:] if text[:1] in "+-" else text
    if not body or not re.fullmatch(f"(?:{_PART.pattern})+", body):
        raise ValueError(
            f"bad duration {value!r}: expected seconds or a string like "
            "'250ms', '90s', '5m', '2h', '1h30m' or '5 min'"
        )
    total = 0.0
    for number, spelling in _PART.findall(body):
        unit = _SPELLINGS[spelling]
        scale = _WEEK if unit == "w" else _UNITS[unit]
        total += float(number) / 1000 if scale is None else float(number) * scale
    return _bounded(value, sign * total)


def _bounded(value, seconds: float) -> float:
    if not math.isfinite(seconds):
        raise ValueError(f"bad duration {_short(value)}: must be finite")
    if abs(seconds) > MAX_DURATION:
        raise ValueError(f"bad duration {_short(value)}: longer than 100 years")
    return seconds


def _short(value) -> str:
    text = repr(value)  # a 400-digit number need not be shown in full
    return text if len(text) <= 40 else text[:40] + "..."


def format_duration(seconds: float) -> str:
    """The shortest string that ``parse_duration`` reads back as ``seconds``.

    Ties prefer forms without a decimal point: 90 -> "90s", 5400 -> "90m",
    0.25 -> "250ms", 1.5 -> "1.5s", 3725 -> "3725s" (shorter than "1h2m5s").
    Only a number no unit can express exactly (1/3) comes back as bare seconds.
    """
    seconds = parse_duration(seconds)
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds == 0:
        return "0s"
    candidates = [_compound(seconds)]
    for unit, scale in _UNITS.items():
        amount = _plain(seconds * 1000 if scale is None else seconds / scale)
        candidates.append(amount and amount + unit)
    candidates.append(repr(seconds))  # bare seconds: always parses back exactly
    exact = [c for c in candidates if c and parse_duration(c) == seconds]
    # A unit reads better than bare seconds; then shorter; then no decimal point.
    return min(exact, key=lambda c: (c[-1].isdigit(), len(c), "." in c or "e" in c))


def _plain(amount: float) -> str:
    """A number without a needless ".0"; "" when it needs an exponent."""
    text = repr(float(amount))
    if "e" in text or "inf" in text or "nan" in text:
        return ""
    return text[:-2] if text.endswith(".0") else text


def _compound(seconds: float) -> str:
    """Whole seconds as "1h30m"-style parts; "" when there is a fraction."""
    if seconds != int(seconds) or seconds >= 1e12:  # huge values read better as 1e+15
        return ""
    rest = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        amount, rest = divmod(rest, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts)
