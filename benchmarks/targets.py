"""What a bench run measures: Wurk at some revision, or a peer, and how to start it."""

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wurk_django.core.identity import rss_kb

CHECKOUT = Path(__file__).resolve().parents[1]  # the Wurk checkout this harness is part of
WORKLOADS_DIR = Path(__file__).with_name("workloads")
STOP_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 600.0
PR_SET_PDEATHSIG = 1


class BenchError(Exception):
    """A run could not be measured (a worker died, a probe failed, a timeout)."""


@dataclass
class Target:
    """One column of the result table: a system, its interpreter and its worker command."""

    system: str  # runs workloads/bench_<system>.py
    label: str
    python: str
    worker_argv: Callable[["Target", int, int], list[list[str]]]
    settings: str  # how its worker runs, printed with the results
    root: str | None = None  # a Wurk checkout imported before anything installed
    max_jobs: int | None = None  # a slow variant (RQ forking per job) runs fewer
    url_env: tuple = ()  # more variables its worker reads the Redis URL from
    info: dict = field(default_factory=dict)  # versions, filled in by the first probe
    # The command a user first runs, flags left at their defaults (benchmarks/defaults.py).
    default_argv: Callable[["Target"], list[str]] | None = None
    default_env: dict = field(default_factory=dict)

    def env(self, redis_url: str) -> dict:
        env = dict(os.environ)
        paths = [str(WORKLOADS_DIR)] + ([self.root] if self.root else [])
        env.update({"BENCH_REDIS_URL": redis_url, "REDIS_URL": redis_url,
                    "WURK_REDIS_URL": redis_url,  # a Django project's worker reads this
                    "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(paths)})
        env.update({name: redis_url for name in self.url_env})
        env.pop("DJANGO_SETTINGS_MODULE", None)
        return env

    @property
    def cwd(self) -> str:
        return self.root or tempfile.gettempdir()

    def probe(self, redis_url: str, *args) -> dict:
        """Run `bench_probe` in this target's interpreter; return its JSON answer."""
        argv = [self.python, "-m", "bench_probe", self.system, *map(str, args)]
        done = subprocess.run(argv, env=self.env(redis_url), cwd=self.cwd, text=True,
                              capture_output=True, timeout=PROBE_TIMEOUT_S,
                              preexec_fn=die_with_parent)
        if done.returncode != 0:
            raise BenchError(f"{self.label}: probe {' '.join(map(str, args))} failed:\n"
                             f"{done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def start(self, redis_url: str, threads: int, processes: int, log_path: Path) -> "Workers":
        return Workers(self.worker_argv(self, threads, processes), self.env(redis_url),
                       self.cwd, log_path)


class Workers:
    """The worker processes of one run; their output goes to a log file."""

    def __init__(self, argvs: list[list[str]], env: dict, cwd: str, log_path: Path):
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.processes = [subprocess.Popen(argv, env=env, cwd=cwd, stdout=self._log,
                                           stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
                          for argv in argvs]

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.processes)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def leaf_pids(self) -> list[int]:
        """The processes that run jobs: a supervisor's children, or the process itself."""
        leaves = []
        for process in self.processes:
            leaves += _leaves(process.pid)
        return leaves

    def rss_mib(self) -> list[float]:
        return [rss_kb(pid) / 1024 for pid in self.leaf_pids()]

    def stop(self) -> None:
        """Kill every worker process and its children at once.

        Nothing is measured after a run, and the next run flushes Redis; a graceful
        stop would only wait out each system's blocking fetch (2 s for Wurk) per run.
        """
        for process in self.processes:
            _kill_tree(process.pid)
        for process in self.processes:
            process.wait(STOP_TIMEOUT_S)
        self._log.close()


def die_with_parent() -> None:
    """In a child before exec: be SIGKILLed if the bench dies, even by SIGKILL, so no
    worker or redis-server outlives an interrupted run (Linux; elsewhere a no-op)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def _leaves(pid: int) -> list[int]:
    children = _children(pid)
    if not children:
        return [pid]
    return [leaf for child in children for leaf in _leaves(child)]


def _kill_tree(pid: int) -> None:
    # Stopped first, so a supervisor cannot fork a replacement while its children die.
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return
    for child in _children(pid):
        _kill_tree(child)
    os.kill(pid, signal.SIGKILL)


class WithTasks:
    """A Wurk target whose probe fills with a section's own tasks (`bench_probe wurk
    <section> fill ...`) and whose workers load that task module too."""

    def __init__(self, target: Target, section: str, module: str):
        self._target, self._section, self._module = target, section, module

    def __getattr__(self, name):
        return getattr(self._target, name)

    def probe(self, redis_url: str, *args):
        if args[0] == "fill":
            return self._target.probe(redis_url, self._section, *args)
        return self._target.probe(redis_url, *args)

    def start(self, redis_url: str, threads: int, processes: int, log_path) -> Workers:
        argvs = [[*argv, "--require", self._module]
                 for argv in self._target.worker_argv(self._target, threads, processes)]
        return Workers(argvs, self._target.env(redis_url), self._target.cwd, log_path)


# --- Wurk ------------------------------------------------------------------------------

def wurk_worker_argv(target: Target, threads: int, processes: int) -> list[list[str]]:
    return [[target.python, "-m", "wurk_django.core", "--require", "bench_wurk",
             "-c", str(threads), "-p", str(processes), "-q", "default", "-t", "5"]]


WURK_SETTINGS = ("python -m wurk_django.core --require bench_wurk -c THREADS -p PROCESSES "
                 "-q default: defaults otherwise (reliable fetch, job log lines on, to a "
                 "file), hiredis if installed")


def project_worker_argv(target: Target, threads: int, processes: int) -> list[list[str]]:
    # The example project's own entry point, as users start it, from the target's checkout
    # (its cwd), so `--vs` boots each revision's project; the project's worker finds the
    # bench tasks through the registry's import-on-demand (bench_wurk is on its PYTHONPATH).
    return [[target.python, "manage.py", "wurk_worker", "-c", str(threads),
             "-p", str(processes), "-v", "0"]]


def project_default_argv(target: Target) -> list[str]:
    # `manage.py wurk_worker` with every flag at its default: the example project's WURK
    # (5 threads, queues critical,3 default,2 low), job log lines at INFO, to a file.
    return [target.python, "manage.py", "wurk_worker"]


def wurk_target(label: str = "wurk", root: str | None = None,
                python: str = sys.executable) -> Target:
    return Target("wurk", label, python, wurk_worker_argv, WURK_SETTINGS,
                  root=root or str(CHECKOUT), default_argv=project_default_argv,
                  default_env={"DJANGO_SETTINGS_MODULE": "example_project.settings"})
