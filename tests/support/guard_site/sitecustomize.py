"""Run by Python at start-up in every process the tests start (this directory is on their
PYTHONPATH): installs the shared-Redis guard when the suite named its log."""

import os

if os.environ.get("WURK_TEST_STRAY_REDIS_LOG"):
    import importlib.util

    # Loaded by path, so the guard is on even where the repository is not on sys.path.
    _path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "shared_redis_guard.py")
    _spec = importlib.util.spec_from_file_location("wurk_test_shared_redis_guard", _path)
    _guard = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_guard)
    _guard.install(os.environ[_guard.LOG_VARIABLE])
