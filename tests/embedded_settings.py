"""Settings for the embedded-worker tests: the suite's settings with WURK["EMBEDDED"] on.

The database file comes from WURK_TEST_DB, so the `runserver` and `migrate` processes
these tests start never touch the suite's own database; WURK_TEST_PROJECT_DIR moves the
project folder (where REDIS_URL = "embedded" keeps its server) out of the repository.
"""

import os
from pathlib import Path

from tests.settings import *  # noqa: F403
from tests.settings import BASE_DIR, WURK

WURK = {**WURK, "EMBEDDED": {"CONCURRENCY": 3}}
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         "NAME": os.environ.get("WURK_TEST_DB",
                                                str(BASE_DIR / "embedded-db.sqlite3"))}}
BASE_DIR = Path(os.environ.get("WURK_TEST_PROJECT_DIR") or BASE_DIR)
