"""Real worker processes for tests, started the way users start them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ignore(signum, frame) -> None:
    """Ignore a signal as SIG_IGN does, in Python, so exec resets it to the default."""


def let_children_take_sigint() -> None:
    """A suite launched with SIGINT ignored (`nohup`, `cmd &` in a script, `trap '' INT`)
    would pass SIG_IGN on to every process a test starts, since exec keeps an ignored
    signal ignored: a worker or server would then shrug off the SIGINT a test sends and the
    test hang. A handler is reset to the default at exec instead, so this process still
    ignores SIGINT, as its launcher asked, while the processes it starts take it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, _ignore)


let_children_take_sigint()  # tests/conftest.py imports this module at start, in the main thread


def wait_until(predicate, timeout_s: float = 10, interval_s: float = 0.02, message: str = ""):
    """Poll `predicate` until it returns something truthy; fail with `message` on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for "
                                 f"{message or predicate}")
        time.sleep(interval_s)


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie counts as gone (PID 1 here may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def children(parent: int) -> set[int]:
    """The live child pids of `parent`."""
    out = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout
    return {pid for pid in map(int, out.split()) if alive(pid)}


class WorkerProcess:
    """A `python -m wurk_django.core` process whose output goes to a log file."""

    def __init__(self, args: list[str], env: dict, log_path: Path,
                 command: list[str] | None = None):
        self.args = args
        self.env = env
        self.log_path = log_path
        self.command = command or [sys.executable, "-m", "wurk_django.core"]
        self.process: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen([*self.command, *self.args], cwd=ROOT, env=self.env,
                                        stdout=self._log, stderr=subprocess.STDOUT)
        return self

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, timeout_s: float = 15) -> None:
        wait_until(lambda: text in self.log() or self._died(), timeout_s, 0.05,
                   f"{text!r} in the worker log")
        if text not in self.log():
            raise AssertionError(f"worker exited before logging {text!r}:\n{self.log()}")

    def _died(self) -> bool:
        return self.process.poll() is not None

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout_s: float = 30) -> int:
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired as exc:
            message = f"worker did not exit within {timeout_s} s:\n{self.log()}"
            raise AssertionError(message) from exc

    def stop(self) -> None:
        """Kill it if it is still running (test teardown)."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        if getattr(self, "_log", None):
            self._log.close()


def worker_env(redis_url: str, **extra) -> dict:
    env = dict(os.environ)
    env.update({"REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))})
    env.update(extra)
    return env
