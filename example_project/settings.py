"""Settings of the example project: a small shop whose background work runs on Wurk."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "wurk-example-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
USE_TZ = True
TIME_ZONE = "UTC"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "wurk_django",
    "example_project.shop",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "example_project.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         # The demo's own test points it at a temporary file.
                         "NAME": os.environ.get("WURK_EXAMPLE_DB", BASE_DIR / "db.sqlite3"),
                         "OPTIONS": {"timeout": 20}}}
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Wurk: "embedded" starts a private redis-server under .wurk/ for development;
# set WURK_REDIS_URL=redis://host:6379/0 to use a real one.
WURK = {
    "REDIS_URL": "embedded",
    "CONCURRENCY": 5,
    "QUEUES": ["critical,3", "default,2", "low"],
    # A push that finds Redis down waits in memory (up to 1,000) and is sent when it is back.
    "RELIABLE_PUSH": {"BUFFER": 1000, "OVERFLOW": "drop_oldest"},
}

# Django's own tasks API, running on Wurk workers.
TASKS = {"default": {"BACKEND": "wurk_django.tasks_backend.WurkBackend"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
