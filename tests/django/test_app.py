"""The app itself: autodiscovery of tasks modules and no side effects at import."""

import subprocess
import sys

from tests.support.redis_server import free_port
from tests.support.workers import ROOT, worker_env


def run_python(code: str, **env) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60,
                            env=worker_env(f"redis://127.0.0.1:{free_port()}/0", **env))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_setup_autodiscovers_tasks_modules_without_touching_redis():
    out = run_python(
        "import django, time; t = time.monotonic(); django.setup(); "
        "from wurk_django.core.registry import REGISTRY; "
        "print('tests.djangoapp.tasks.mark_order' in REGISTRY, time.monotonic() - t < 5)",
        DJANGO_SETTINGS_MODULE="tests.settings")
    assert out == "True True"


def test_importing_the_package_reads_no_settings_and_imports_no_django():
    out = run_python(
        "import sys, pkgutil, importlib, wurk_django, wurk_django.core\n"
        "from wurk_django import wurk_task, Job, Config, WurkError\n"
        "for m in pkgutil.walk_packages(wurk_django.core.__path__, 'wurk_django.core.'):\n"
        "    if not m.name.endswith('.__main__'): importlib.import_module(m.name)\n"
        "print(any(name == 'django' or name.startswith('django.') for name in sys.modules))")
    assert out == "False"
