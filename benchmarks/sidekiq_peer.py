"""Sidekiq as a peer: Ruby's `sidekiq` (6.4, Debian's ruby-sidekiq) running the shapes of
workloads/sidekiq_jobs.rb; the probe side is Python (workloads/bench_sidekiq.py), pushing
Sidekiq's wire format with Wurk's client."""

import shutil
import subprocess
import sys

from .targets import CHECKOUT, WORKLOADS_DIR, BenchError, Target

JOBS_FILE = WORKLOADS_DIR / "sidekiq_jobs.rb"
SETTINGS = ("sidekiq -r sidekiq_jobs.rb (default concurrency: 10 threads in Sidekiq 6.4), "
            "one process per copy; -c THREADS for the thread rows; job log lines on, to a "
            "file; BRPOP fetch (Sidekiq OSS)")


def sidekiq_argv(target: Target, threads: int, processes: int) -> list[list[str]]:
    return [[_sidekiq(), "-r", str(JOBS_FILE), "-c", str(threads), "-q", "default"]
            for _ in range(processes)]


def default_argv(target: Target) -> list[str]:
    return [_sidekiq(), "-r", str(JOBS_FILE)]  # as Sidekiq's own README starts it


def _sidekiq() -> str:
    return shutil.which("sidekiq") or "sidekiq"


def target(python: str = sys.executable) -> Target:
    if shutil.which("sidekiq") is None or shutil.which("ruby") is None:
        raise BenchError("--sidekiq needs ruby and Sidekiq: apt-get install ruby-sidekiq "
                         "(Debian 12: Sidekiq 6.4)")
    found = Target("sidekiq", "sidekiq", python, sidekiq_argv, SETTINGS, root=str(CHECKOUT),
                   default_argv=default_argv)
    found.info.update(version=_ruby('require "sidekiq"; print Sidekiq::VERSION'),
                      ruby=_ruby("print RUBY_VERSION"),
                      cpu_body_ms=float(_ruby_file("cpu-body-ms")))
    return found


def _ruby(code: str) -> str:
    return subprocess.run(["ruby", "-e", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def _ruby_file(*args: str) -> str:
    return subprocess.run(["ruby", str(JOBS_FILE), *args], capture_output=True, text=True,
                          check=True).stdout.strip()
