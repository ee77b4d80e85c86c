"""Cron schedules in a time zone, safe across daylight-saving changes.

``CronTrigger("30 2 * * *", tz="Europe/Berlin")`` gives the next wall-clock times
of an expression (5 fields, or 6 with seconds first), computed by ``cronsim``.
crontab's shorthands are read too: ``@yearly`` (``@annually``), ``@monthly``,
``@weekly``, ``@daily`` (``@midnight``) and ``@hourly`` (``MACROS``).

Daylight saving, for a job at a fixed time of day (minute and hour fields are
not ``*`` or ``*/n``), follows Debian cron, which is what people expect:

- spring forward: a time that does not exist that day (02:30 in Berlin on the
  last Sunday of March) runs once, at the first minute that exists after it
  (03:00);
- fall back: a time that happens twice (02:30 on the last Sunday of October)
  runs once, at its first occurrence.

Expressions with ``*`` or a step in the minute or hour field ("*/15 * * * *")
follow real elapsed time instead: they fire at every matching instant, so the
repeated hour on a fall-back day gets its runs too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from .errors import InvalidArgument

# crontab(5)'s shorthands, as Vixie/Debian cron reads them. ``@reboot`` has no time.
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def expand(expr: str) -> str:
    """The fields an expression stands for: a shorthand's (``@daily``), else itself
    with its whitespace normalised. Case does not matter for a shorthand."""
    text = " ".join(expr.split())
    return MACROS.get(text.lower(), text)


def zone(name: str) -> ZoneInfo:
    """The ``ZoneInfo`` for an IANA name; ``ValueError`` naming it if unknown."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"unknown time zone {name!r}", "tz")
    try:
        return ZoneInfo(name)
    # Not only "not found": a tzdata folder ("Europe") raises IsADirectoryError, a
    # broken file ValueError or another error; each means no such zone.
    except Exception:
        raise InvalidArgument(f"unknown time zone {name!r}", "tz") from None


class CronTrigger:
    """The fire times of a cron expression, in a time zone (default UTC)."""

    def __init__(self, expr: str, tz: str = "UTC"):
        if not isinstance(expr, str):
            raise InvalidArgument(f"bad cron expression {expr!r}: expected a string", "cron")
        self.expr = " ".join(expr.split())
        self.fields = expand(self.expr)  # what cronsim reads: "@daily" -> "0 0 * * *"
        self.tz = tz
        self.zone = zone(tz)
        if self.fields.startswith("@"):
            known = ", ".join(MACROS)
            raise InvalidArgument(
                f"bad cron expression {expr!r}: unknown shorthand (known: {known})", "cron"
            )
        try:
            CronSim(self.fields, datetime(2000, 1, 1, tzinfo=self.zone))
        except CronSimError as exc:
            raise InvalidArgument(f"bad cron expression {expr!r}: {exc}", "cron") from None
        # An expression that parses can still never fire ("0 0 31 2 *" is caught by
        # cronsim, "0 0 30 2 *" is not): find out now rather than at run time.
        self.next_after(datetime(2000, 1, 1, tzinfo=UTC))

    def next_after(self, after: datetime) -> datetime:
        """The first fire time strictly after the aware datetime ``after``, in the zone."""
        if after.tzinfo is None or after.utcoffset() is None:
            raise ValueError(f"next_after needs an aware datetime, got {after!r}")
        local = after.astimezone(self.zone)
        times = CronSim(self.fields, local)
        try:
            fire = next(times)
            # cronsim works on naive wall time for fixed-time jobs, so from inside a
            # repeated fall-back hour (second 02:15) it can answer the first 02:30,
            # which is already past: skip anything that is not later in real time.
            # (Compare in UTC: datetimes sharing a tzinfo compare by wall time.)
            while fire.astimezone(UTC) <= after.astimezone(UTC):
                fire = next(times)
        except StopIteration:
            raise InvalidArgument(f"cron expression {self.expr!r} never fires", "cron") from None
        return fire

    def next_n(self, after: datetime, n: int) -> list[datetime]:
        """The next ``n`` fire times after ``after``, earliest first."""
        result = []
        for _ in range(n):
            after = self.next_after(after)
            result.append(after)
        return result

    def describe(self) -> str:
        return describe(self.expr)

    def __eq__(self, other):
        return isinstance(other, CronTrigger) and (self.expr, self.tz) == (other.expr, other.tz)

    def __hash__(self):
        return hash((self.expr, self.tz))

    def __repr__(self):
        return f"CronTrigger({self.expr!r}, tz={self.tz!r})"

    def __reduce__(self):
        return (CronTrigger, (self.expr, self.tz))


def describe(expr: str) -> str:
    """Plain-language text for a cron expression, e.g. "At 02:00 every day".

    ``ValueError`` naming the expression if it is not valid.
    """
    try:
        return CronSim(expand(str(expr)), datetime(2000, 1, 1)).explain()
    except CronSimError as exc:
        raise InvalidArgument(f"bad cron expression {expr!r}: {exc}", "cron") from None
