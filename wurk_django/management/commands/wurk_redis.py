"""`manage.py wurk_redis start|stop|status`: the project Redis, the private redis-server
that `REDIS_URL = "embedded"` starts (not the worker that `EMBEDDED` runs in web processes)."""

from django.core.management.base import BaseCommand, CommandError

from wurk_django import conf
from wurk_django.core import project_redis
from wurk_django.core.errors import WurkError


class Command(BaseCommand):
    help = ("Start, stop or show the project Redis: the project's own redis-server, which "
            "REDIS_URL = 'embedded' uses (its socket and data live in <project>/.wurk/redis/).")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("start", "stop", "status"))

    def handle(self, *args, action, **options):
        folder = project_redis.project_folder(conf.project_dir())
        try:
            if action == "start":
                project_redis.ensure_server(folder)
            elif action == "stop":
                if not project_redis.stop_server(folder):
                    self.stdout.write(f"No project Redis is running in {folder}")
                    return
                self.stdout.write(f"Stopped the project Redis in {folder}")
                return
            status = project_redis.server_status(folder)
        except WurkError as exc:
            raise CommandError(f"wurk_redis: {exc}") from None
        if status["running"]:
            self.stdout.write(f"The project Redis {status['version']} is running (pid "
                              f"{status['pid']}) at {status['url']}")
        else:
            self.stdout.write(f"No project Redis is running in {folder}")
