"""Refuse, and record, every connection to port 6379: the machine's shared Redis.

Tests use the suite's own redis-server on a free port. Some redis-py connection kinds
(Sentinel's among them) fall back to localhost:6379 when misused; on a machine that
runs a Redis there, such a test would pass silently against the wrong server. The
guard wraps `socket.socket.connect` and `connect_ex` (which `socket.create_connection`,
redis-py and asyncio all end in), refuses the connection as a closed port would, and
appends a line to a log shared by the test process and every process it starts, which
tests/conftest.py reads to fail the test that made it. Standard library only: worker
processes install it from sitecustomize (tests/support/guard_site) before anything else.
"""

import errno
import os
import socket
import sys
import traceback

GUARDED_PORT = 6379
LOG_VARIABLE = "WURK_TEST_STRAY_REDIS_LOG"  # the log's path; set, the guard is on
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard_site")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


class StrayRedisConnection(ConnectionRefusedError):
    """A connection to the shared Redis on port 6379, refused by the test guard."""


def guarded_target(address) -> str | None:
    """`host:port` if `address` is an internet address on the guarded port, else None."""
    if isinstance(address, tuple) and len(address) >= 2 and address[1] == GUARDED_PORT:
        return f"{address[0]}:{address[1]}"
    return None


def _caller() -> str:
    """The process and the innermost frames of the repository's own code, on one line."""
    frames = [frame for frame in traceback.extract_stack()[:-3]  # not refuse() or the wrapper
              if frame.filename != socket.__file__]
    ours = [frame for frame in frames
            if frame.filename.startswith(ROOT) and "site-packages" not in frame.filename] or frames
    where = " <- ".join(f"{os.path.relpath(frame.filename, ROOT)}:{frame.lineno} {frame.name}"
                        for frame in reversed(ours[-3:]))
    return f"{where} (in {' '.join(sys.argv)[:120]})"


class Guard:
    """The installed wrappers and the shared log they append to."""

    def __init__(self, log_path: str):
        self.log_path = log_path
        self._read_up_to = 0
        self._originals = (socket.socket.connect, socket.socket.connect_ex)

    def refuse(self, target: str) -> StrayRedisConnection:
        message = (f"the test guard refused a connection to {target}: tests must never reach "
                   f"the machine's shared Redis on port {GUARDED_PORT}; use the suite's own "
                   f"server (the redis_url fixture)")
        line = f"pid={os.getpid()} {target} from {_caller()}\n"
        with open(self.log_path, "a") as log:
            log.write(line)
        print(f"{message} (pid {os.getpid()})", file=sys.stderr, flush=True)
        return StrayRedisConnection(errno.ECONNREFUSED, message)

    def new_attempts(self) -> list[str]:
        """Attempts logged, by any process, since the last call."""
        try:
            with open(self.log_path) as log:
                log.seek(self._read_up_to)
                text = log.read()
                self._read_up_to = log.tell()
        except FileNotFoundError:
            return []
        return text.splitlines()

    def uninstall(self) -> None:
        socket.socket.connect, socket.socket.connect_ex = self._originals


def install(log_path: str) -> Guard:
    """Wrap the socket connect calls for this process; attempts go to `log_path`."""
    guard = Guard(log_path)
    connect, connect_ex = guard._originals

    def guarded_connect(self, address):
        target = guarded_target(address)
        if target:
            raise guard.refuse(target)
        return connect(self, address)

    def guarded_connect_ex(self, address):
        target = guarded_target(address)
        if target:
            guard.refuse(target)
            return errno.ECONNREFUSED
        return connect_ex(self, address)

    socket.socket.connect, socket.socket.connect_ex = guarded_connect, guarded_connect_ex
    return guard
