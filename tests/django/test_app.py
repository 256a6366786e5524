"""The app itself: autodiscovery of tasks modules and no side effects at import."""

import socket
import subprocess
import sys
import threading

import pytest

from tests.support.redis_server import free_port
from tests.support.workers import ROOT, worker_env


def run_python(code: str, redis_url: str | None = None, **env) -> subprocess.CompletedProcess:
    url = redis_url or f"redis://127.0.0.1:{free_port()}/0"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=worker_env(url, WURK_REDIS_URL=url, **env))


def python_output(code: str, **env) -> str:
    result = run_python(code, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


class CountingListener:
    """A real TCP listener standing in for Redis: it counts every connection made to it
    and closes each at once, so a client that tries fails fast instead of waiting."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.05)
        self.url = f"redis://127.0.0.1:{self.server.getsockname()[1]}/0"
        self.accepted = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # After stop(), keep accepting until the backlog is empty: a connection the
        # child made just before it exited still counts.
        while True:
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                if self._stopping.is_set():
                    return
                continue
            self.accepted += 1
            connection.close()

    def stop(self) -> int:
        self._stopping.set()
        self._thread.join(10)
        self.server.close()
        return self.accepted


@pytest.fixture
def listener():
    listener = CountingListener()
    yield listener
    listener.stop()


SETUP = ("import django; django.setup(); "
         "from wurk_django.core.registry import REGISTRY; "
         "print('tests.djangoapp.tasks.mark_order' in REGISTRY)")


def test_setup_autodiscovers_tasks_modules_without_touching_redis(listener):
    result = run_python(SETUP, redis_url=listener.url, DJANGO_SETTINGS_MODULE="tests.settings")
    assert listener.stop() == 0, f"django.setup() connected to Redis:\n{result.stderr}"
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_the_listener_counts_a_connection_the_settings_lead_to(listener):
    # The check above can fail: the same settings, one ping, one connection counted.
    run_python(SETUP + "; from wurk_django.core.config import get_default_config; "
               "from wurk_django.core.redis import connection_for; "
               "connection_for(get_default_config()).client.ping()",
               redis_url=listener.url, DJANGO_SETTINGS_MODULE="tests.settings")
    assert listener.stop() >= 1


def test_importing_the_package_reads_no_settings_and_imports_no_django():
    out = python_output(
        "import sys, pkgutil, importlib, wurk_django, wurk_django.core\n"
        "from wurk_django import wurk_task, Job, Config, WurkError\n"
        "for m in pkgutil.walk_packages(wurk_django.core.__path__, 'wurk_django.core.'):\n"
        "    if not m.name.endswith('.__main__'): importlib.import_module(m.name)\n"
        "print(any(name == 'django' or name.startswith('django.') for name in sys.modules))")
    assert out == "False"
