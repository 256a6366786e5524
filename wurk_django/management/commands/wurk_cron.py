"""`manage.py wurk_cron`: list, pause, unpause, fire and show the history of cron loops,
through the data API's LoopSet as the dashboard does, printed as plain-text tables."""

from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError

from wurk_django import conf
from wurk_django.core.api import Loop, LoopSet
from wurk_django.core.cron_schedule import lenient_zone
from wurk_django.core.errors import WurkError

ACTIONS = ("list", "pause", "unpause", "fire", "history")


class Command(BaseCommand):
    help = "Show and operate the periodic jobs (cron loops) stored in Redis."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=ACTIONS)
        parser.add_argument("lid", nargs="?", help="the loop id (see `wurk_cron list`)")

    def handle(self, *args, action, lid, **options):
        if action != "list" and not lid:
            raise CommandError(f"wurk_cron {action} needs a loop id; see `wurk_cron list`")
        try:
            self.stdout.write(self.run(action, lid, LoopSet(conf.build_config())))
        except WurkError as exc:
            raise CommandError(f"wurk_cron: {exc}") from None

    def run(self, action, lid, loop_set: LoopSet) -> str:
        if action == "list":
            return loops_table(list(loop_set), loop_set.problems)
        loop = loop_set.fetch(lid)
        if loop is None:
            raise CommandError(f"no loop {lid!r}; see `wurk_cron list`")
        if action == "pause":
            loop_set.pause(lid)
            return f"Paused {loop.klass} ({lid})."
        if action == "unpause":
            loop_set.unpause(lid)
            return f"Unpaused {loop.klass} ({lid})."
        if action == "fire":
            jid = loop_set.fire(lid)
            return f"Pushed {loop.klass} ({lid}) as {jid}." if jid else "A middleware halted it."
        if not loop.history:
            return f"{loop.klass} ({lid}) has not fired yet."
        rows = [[*_times(fired_at, loop.tz), jid] for fired_at, jid in loop.history]
        return _table([["FIRED (LOOP TZ)", "FIRED (UTC)", "JID"], *rows])


def loops_table(loops: list[Loop], problems: list[str]) -> str:
    """Every loop with its next fire in its own zone and in UTC, then the loops left out."""
    rows = [["LID", "CLASS", "SCHEDULE", "STATE", "NEXT FIRE (LOOP TZ)", "NEXT FIRE (UTC)",
             "LAST FIRE (UTC)"]]
    rows += [[loop.lid, loop.klass, loop.schedule, "paused" if loop.paused else "active",
              *_times(loop.upcoming, loop.tz), _times(loop.last_fired_at, "")[1]]
             for loop in loops]
    lines = [_table(rows)] if loops else ["No periodic jobs are registered."]
    return "\n".join(lines + [f"Left out: {problem}" for problem in problems])


def _times(epoch: int | None, tz: str) -> tuple[str, str]:
    """An instant in the loop's zone and in UTC."""
    if epoch is None:
        return "-", "-"
    utc = datetime.fromtimestamp(epoch, UTC)
    local = utc.astimezone(lenient_zone(tz))
    return f"{local:%Y-%m-%d %H:%M:%S} {tz or 'UTC'}", f"{utc:%Y-%m-%d %H:%M:%S} UTC"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in rows)
