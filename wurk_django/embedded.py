"""Runs the embedded worker (`WURK["EMBEDDED"]`) inside web-serving processes, once each.

`AppConfig.ready()` calls `start_if_serving()`. It starts a worker only where web
requests are served: the serving child of `runserver` (not its autoreloader watcher),
`runserver --noreload`, and WSGI/ASGI servers such as gunicorn or uvicorn, which run
no management command. `migrate`, `check`, `shell`, `test` and other commands never
start one, nor does pytest. The worker stops when the process exits.
"""

import atexit
import os
import sys
import threading
from pathlib import Path

from . import conf
from .core.config import get_default_config
from .core.embedded import Embedded, configure_embed
from .core.errors import ConfigurationError
from .task_queues import serve_task_queues

SERVING_COMMANDS = ("runserver",)
MANAGE_SCRIPTS = ("manage.py", "django-admin", "django-admin.py")
TEST_RUNNERS = ("pytest", "py.test")
# Django's autoreloader sets RUN_MAIN=true in the child that actually serves.
AUTORELOAD_ENV = "RUN_MAIN"

_embedded: Embedded | None = None
_guard = threading.Lock()


def management_command(argv: list[str]) -> str | None:
    """The management command this process runs, or None if it runs none (a web server)."""
    program = Path(argv[0]) if argv and argv[0] else Path("")
    by_django = program.name in MANAGE_SCRIPTS or program.parts[-2:] == ("django",
                                                                         "__main__.py")
    if by_django:
        return argv[1] if len(argv) > 1 else "help"
    if len(argv) > 1:
        # A renamed manage.py still names a known command first.
        from django.core.management import get_commands
        if argv[1] in get_commands():
            return argv[1]
    return None


def web_serving(argv: list[str] | None = None, environ=None) -> bool:
    """True in a process that serves web requests and should host the embedded worker."""
    argv = (getattr(sys, "argv", None) or [""]) if argv is None else argv
    environ = os.environ if environ is None else environ
    command = management_command(argv)
    if command is None:
        program = Path(argv[0]) if argv and argv[0] else Path("")
        # `pytest` or `python -m pytest` (argv[0] is then pytest/__main__.py).
        return program.name not in TEST_RUNNERS and program.parent.name not in TEST_RUNNERS
    if command not in SERVING_COMMANDS:
        return False
    # The autoreloader's watcher re-runs this command in a child; only the child serves.
    return environ.get(AUTORELOAD_ENV) == "true" or "--noreload" in argv


def start_if_serving() -> Embedded | None:
    """Start the embedded worker if `WURK["EMBEDDED"]` asks and this process serves."""
    try:
        overrides = conf.embedded_overrides(conf.wurk_settings())
    except ConfigurationError:
        return None  # a malformed setting is reported by the system checks (wurk.E007)
    if overrides is None or not web_serving():
        return None
    return start(**overrides)


def start(**overrides) -> Embedded:
    """Start this process's embedded worker; a second call returns the running one."""
    global _embedded
    with _guard:
        if _embedded is None:
            embedded = configure_embed(get_default_config(), **overrides)
            # As wurk_worker does: the django.tasks backends' queues are served too,
            # unless WURK["EMBEDDED"] names its queues (then those left out are named).
            embedded.config = serve_task_queues(embedded.config,
                                                explicit="queues" in overrides)
            embedded.run()
            _embedded = embedded
            atexit.register(stop)
        return _embedded


def stop() -> None:
    """Stop this process's embedded worker, if any (also run at exit)."""
    global _embedded
    with _guard:
        embedded, _embedded = _embedded, None
    if embedded is not None:
        embedded.stop()


def current() -> Embedded | None:
    """The embedded worker running in this process, if any."""
    return _embedded
