"""Settings a new project often gives its workers: apps and WURK, but no ROOT_URLCONF (no
pages to serve) and no TASKS (so Django's default ImmediateBackend)."""

import os
import tempfile

SECRET_KEY = "wurk-worker-only"
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "wurk_django",
    "tests.workeronly",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         "NAME": os.environ.get("WURK_TEST_DB", os.path.join(
                             tempfile.gettempdir(), "wurk-worker-only.sqlite3"))}}
WURK = {"QUEUES": ["default"], "CONCURRENCY": 2, "POLL_INTERVAL_AVERAGE": 1,
        "HEARTBEAT_INTERVAL": 1}
