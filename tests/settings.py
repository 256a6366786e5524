"""Django settings for the test suite. Redis comes from WURK_REDIS_URL, which the suite
sets to its private server before any test runs."""

import os
import tempfile
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "wurk-tests"
DEBUG = True
USE_TZ = True
ROOT_URLCONF = "tests.urls"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "wurk_django",
    "tests.djangoapp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
# One SQLite file per test run, shared with the worker processes the run starts (they
# inherit the variable), so concurrent runs never step on each other's database.
TEST_DB = os.environ.setdefault(
    "WURK_TEST_DB", os.path.join(tempfile.gettempdir(), f"wurk-test-{os.getpid()}.sqlite3"))
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": TEST_DB,
                         "TEST": {"NAME": TEST_DB}, "OPTIONS": {"timeout": 20}}}
STATIC_URL = "/static/"
# Fast polls and beats keep worker-process tests quick; production keeps the defaults.
WURK = {"QUEUES": ["default"], "CONCURRENCY": 2, "POLL_INTERVAL_AVERAGE": 1,
        "HEARTBEAT_INTERVAL": 1}

# Django's tasks framework (django.tasks, or the django-tasks backport) run by Wurk;
# the test tasks live in tests/djangoapp/django_tasks.py.
TASKS = {
    "default": {"BACKEND": "wurk_django.tasks_backend.WurkBackend",
                "QUEUES": ["default", "reports"], "OPTIONS": {"RETRY": 1}},
    "once": {"BACKEND": "wurk_django.tasks_backend.WurkBackend",
             "QUEUES": ["default"], "OPTIONS": {"RETRY": False, "RESULT_TTL": 600}},
}
