"""`manage.py wurk_cron`: list, pause, unpause, fire and show the history of cron loops."""

from django.core.management.base import BaseCommand, CommandError

from wurk_django import conf
from wurk_django.core import cron_ops
from wurk_django.core.errors import WurkError
from wurk_django.core.redis import REDIS_ERRORS, connection_for

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
            config = conf.build_config()
            connection = connection_for(config)
            self.stdout.write(self.run(action, lid, config, connection))
        except (WurkError, *REDIS_ERRORS) as exc:
            raise CommandError(f"wurk_cron: {exc}") from None

    def run(self, action, lid, config, connection) -> str:
        if action == "list":
            loops = cron_ops.loops(connection)
            return cron_ops.loops_table(loops) if loops else "No periodic jobs are registered."
        loop = cron_ops.fetch(connection, lid)
        if loop is None:
            raise CommandError(f"no loop {lid!r}; see `wurk_cron list`")
        if action == "pause":
            cron_ops.pause(connection, lid)
            return f"Paused {loop.klass} ({lid})."
        if action == "unpause":
            cron_ops.unpause(connection, lid)
            return f"Unpaused {loop.klass} ({lid})."
        if action == "fire":
            jid = cron_ops.fire(config, connection, lid)
            return f"Pushed {loop.klass} ({lid}) as {jid}." if jid else "A middleware halted it."
        entries = cron_ops.history(connection, lid)
        if not entries:
            return f"{loop.klass} ({lid}) has not fired yet."
        return cron_ops.history_table(loop, entries)
