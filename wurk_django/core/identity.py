"""Who this process and thread are on the wire: hostname, identity, tid."""

import os
import secrets
import socket
import threading

_nonce: str | None = None
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def pid() -> int:
    """os.getpid(), read once per process: it is a system call, and the job path asks
    for it several times per job."""
    return _pid


def hostname() -> str:
    return os.environ.get("DYNO") or socket.gethostname()


def process_nonce() -> str:
    """Six random bytes as hex, made once per process image.

    Forked children (`--processes N`) inherit it, as Sidekiq Pro's do: a
    list owner with our host and nonce lives in our PID namespace, so the reaper may
    ask the OS whether its pid is alive instead of waiting for its heartbeat to expire.
    The pid keeps each child's identity unique.
    """
    global _nonce
    if _nonce is None:
        _nonce = secrets.token_hex(6)
    return _nonce


def process_identity() -> str:
    return f"{hostname()}:{os.getpid()}:{process_nonce()}"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if number == 0:
        return "0"
    out = []
    while number:
        number, rest = divmod(number, 36)
        out.append(digits[rest])
    return "".join(reversed(out))


_tids: dict[tuple[int, int], str] = {}


def tid() -> str:
    """This thread's id as Sidekiq writes it: base 36 of thread ident XOR pid.

    Memoised per (thread, pid): it is asked for several times per job.
    """
    key = (threading.get_ident(), _pid)
    value = _tids.get(key)
    if value is None:
        if len(_tids) > 10_000:  # idents of dead threads are reused; keep it small
            _tids.clear()
        value = _tids[key] = _base36(key[0] ^ key[1])
    return value


def rss_kb(pid: int | None = None) -> int:
    """Resident memory of this (or another) process in KB, from /proc on Linux; 0 where
    it cannot be read cheaply."""
    try:
        with open(f"/proc/{pid or 'self'}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
