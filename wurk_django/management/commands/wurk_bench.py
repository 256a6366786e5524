"""`manage.py wurk_bench`: the core benchmark plus boot to first job of a Django project."""

import argparse
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from wurk_django.core.bench import cli, measure
from wurk_django.core.bench.targets import BenchError

ROOT = Path(__file__).resolve().parents[3]


def project_worker_argv(target, threads: int, processes: int) -> list[list[str]]:
    # The project's own entry point, as users start it; it finds the bench tasks through
    # the registry's import-on-demand (bench_wurk is on the worker's PYTHONPATH).
    return [[target.python, str(ROOT / "manage.py"), "wurk_worker", "-c", str(threads),
             "-p", str(processes), "-v", "0"]]


class Command(BaseCommand):
    help = ("Benchmark Wurk against a private Redis: throughput, enqueue rate, latency, boot, "
            "memory, Redis cost per job, dashboard paging (see docs/benchmarks.md).")

    def add_arguments(self, parser):
        cli.add_arguments(parser)
        parser.add_argument("--project-settings", default="example_project.settings",
                            help="settings of the project whose `manage.py wurk_worker` boot "
                                 "is timed (default example_project.settings)")

    def handle(self, *args, **options):
        extra = []
        if (ROOT / "manage.py").exists():
            extra.append(measure.Boot(
                name="example project (manage.py wurk_worker)", argv=project_worker_argv,
                extra_env={"DJANGO_SETTINGS_MODULE": options["project_settings"]}))
        else:
            self.stderr.write(f"No manage.py in {ROOT}: the project's boot is not timed.")
        try:
            status = cli.execute(argparse.Namespace(**options), extra, out=self.stdout)
        except BenchError as exc:
            raise CommandError(f"wurk_bench: {exc}") from None
        if status:
            raise CommandError("wurk_bench: some runs failed (see above)")
        sys.stdout.flush()
