"""Cron expressions for periodic jobs: checking, time zones, next fire times.

croniter does the field matching on naive wall-clock times; this module maps those
times to instants itself, because croniter's own zone handling moves a skipped
spring-forward time to the next valid one and misses some repeated fall-back ones.
"""

import logging
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from .errors import ConfigurationError

logger = logging.getLogger("wurk")

LOOKAHEAD_YEARS = 4
ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Digits, `*`, lists, ranges and steps only: no month or day names, no `L W # ? H`,
# which the Ruby side does not read either.
_FIELD = re.compile(r"^[0-9*,/\-]+$")
# How many values each field has (minute, hour, day, month, weekday, second): a step
# larger than that matches only the first value, never "every N" as written.
_FIELD_SPANS = (("minute", 60), ("hour", 24), ("day", 31), ("month", 12), ("weekday", 7),
                ("second", 60))
_warned_zones: set[str | None] = set()


def normalize_expression(expression) -> str:
    """Return the expression with aliases expanded; raise ConfigurationError if invalid.

    Five fields (minute resolution); a sixth, last as croniter places it, gives seconds.
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ConfigurationError(f"{expression!r} is not a cron expression (a string of "
                                 f"five fields, e.g. '*/5 * * * *')")
    text = " ".join(expression.split())
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise ConfigurationError(f"{expression!r}: unknown alias; use one of "
                                     f"{', '.join(ALIASES)}")
        return ALIASES[text.lower()]
    fields = text.split(" ")
    if len(fields) not in (5, 6):
        raise ConfigurationError(f"{expression!r} has {len(fields)} fields; expected five "
                                 f"(minute hour day month weekday), or six with seconds last")
    bad = [f for f in fields if not _FIELD.match(f)]
    if bad:
        raise ConfigurationError(f"{expression!r}: field {bad[0]!r} may hold only numbers, "
                                 f"'*', ',', '-' and '/'")
    for text_field, (name, span) in zip(fields, _FIELD_SPANS):
        _check_steps(expression, text_field, name, span)
    if not croniter.is_valid(text):
        raise ConfigurationError(f"{expression!r} is not a valid cron expression")
    return text


def _check_steps(expression: str, text: str, name: str, span: int) -> None:
    for part in text.split(","):
        _, slash, step = part.partition("/")
        if slash and (not step.isdigit() or not 1 <= int(step) <= span):
            raise ConfigurationError(f"{expression!r}: the {name} step {part!r} must be "
                                     f"between 1 and {span}")


def zone_for(name: str | None) -> ZoneInfo | timezone:
    """The zone for an IANA name; "" or None is UTC. Raises ConfigurationError if unknown."""
    if not name:
        return UTC
    if not isinstance(name, str):
        raise ConfigurationError(f"a time zone must be an IANA name, got {name!r}")
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(f"unknown time zone {name!r} (use an IANA name such as "
                                 f"'Europe/Berlin')") from None


def lenient_zone(name: str | None) -> ZoneInfo | timezone:
    """As `zone_for`, but an unknown zone (stored by another host) warns once and is UTC."""
    try:
        return zone_for(name)
    except ConfigurationError:
        if name not in _warned_zones:
            _warned_zones.add(name)
            logger.warning("[cron] unknown time zone %r; evaluating its loops in UTC", name)
        return UTC


class CronSchedule:
    """A checked expression in a zone; answers "the next fire time after t"."""

    def __init__(self, expression: str, zone: ZoneInfo | timezone = UTC):
        self.expression = normalize_expression(expression)
        self.zone = zone
        hours = croniter(self.expression).expanded[1]
        # Fall-back rule: a fixed-hour schedule fires once in a repeated hour; a
        # schedule running every hour fires in both.
        self.every_hour = hours == ["*"] or len(hours) == 24

    def next_after(self, t: float) -> int | None:
        """The first fire time strictly after epoch `t`, as whole epoch seconds, or None
        if the schedule never matches within four years."""
        t = int(t)
        # One second back, as croniter yields only times after its start.
        start = self._wall(t) - self._fall_back_within_a_day(t) - timedelta(seconds=1)
        candidates = croniter(self.expression, start, max_years_between_matches=LOOKAHEAD_YEARS)
        best = None
        try:
            while True:
                wall = candidates.get_next(datetime)
                first, second = self._instants(wall)
                if first is None:
                    continue  # in a spring-forward gap: this wall time never happens
                if best is not None and first > best:
                    return best  # later wall times only give later first instants
                for instant in (first, second):
                    if instant is not None and instant > t and (best is None or instant < best):
                        best = instant
                if second is None and first > t:
                    return best
                if wall - start > timedelta(days=366 * LOOKAHEAD_YEARS):
                    return best
        except CroniterBadDateError:
            return best

    def _wall(self, t: int) -> datetime:
        return datetime.fromtimestamp(t, self.zone).replace(tzinfo=None)

    def _fall_back_within_a_day(self, t: int) -> timedelta:
        """How far back to start looking when the clocks go back within a day.

        After such a change wall time repeats, so an instant later than `t` can have
        an earlier wall time; how much earlier depends on how soon the change comes.
        """
        if self.zone is UTC:
            return timedelta(0)
        before = self._offset(t)
        shift = before - self._offset(t + 86_400)
        if shift <= timedelta(0):
            return timedelta(0)
        low, high = t, t + 86_400  # the offset changes in (low, high]
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self._offset(middle) == before else (low, middle)
        return max(shift - timedelta(seconds=high - t), timedelta(0))

    def _offset(self, t: int) -> timedelta:
        # An aware datetime always has an offset.
        return cast(timedelta, datetime.fromtimestamp(t, self.zone).utcoffset())

    def _instants(self, wall: datetime) -> tuple[int | None, int | None]:
        """The instants a naive wall time denotes: (None, None) in a spring-forward gap,
        (first, second) in a repeated hour (second only for every-hour schedules),
        else (instant, None)."""
        early = int(wall.replace(tzinfo=self.zone, fold=0).timestamp())
        late = int(wall.replace(tzinfo=self.zone, fold=1).timestamp())
        if self._wall(early) != wall and self._wall(late) != wall:
            return None, None
        if early == late:
            return early, None
        return early, (late if self.every_hour else None)


def schedule_for(expression: str, tz_name: str | None) -> CronSchedule:
    """A schedule for a stored loop: never raises on the zone (see `lenient_zone`)."""
    return CronSchedule(expression, lenient_zone(tz_name))
