"""Job logging: the per-job log context, start/done/fail lines, text and JSON formats."""

import contextlib
import json
import logging
import os
import sys
import time
from contextvars import ContextVar

from .identity import tid

logger = logging.getLogger("wurk")

_context: ContextVar[dict] = ContextVar("wurk_log_context", default={})
_job_level: ContextVar[int | None] = ContextVar("wurk_job_log_level", default=None)

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
          "warning": logging.WARNING, "error": logging.ERROR, "fatal": logging.CRITICAL}


@contextlib.contextmanager
def log_context(**fields):
    """Add fields to every log line written inside the block (this thread or task only)."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


def current_context() -> dict:
    return _context.get()


def display_class(job: dict) -> str:
    return str(job.get("display_class") or job.get("wrapped") or job.get("class"))


class JobLogger:
    """Sets each job's context and log level, and logs its start and its end."""

    def __init__(self, config):
        self.config = config
        self.skip = config.skip_default_job_logging

    def context_for(self, job: dict) -> dict:
        fields = {"pid": os.getpid(), "tid": tid(), "class": display_class(job),
                  "jid": job.get("jid")}
        for key in self.config.logged_job_attributes:
            if key in job:
                fields[key] = job[key]
        return fields

    @contextlib.contextmanager
    def prepare(self, job: dict):
        level = LEVELS.get(str(job.get("log_level", "")).lower())
        context_token = _context.set({**_context.get(), **self.context_for(job)})
        level_token = _job_level.set(level)
        try:
            yield
        finally:
            _job_level.reset(level_token)
            _context.reset(context_token)

    @contextlib.contextmanager
    def call(self, job: dict, queue: str):
        started = time.monotonic()
        if not self.skip:
            job_log(logging.INFO, "start")
        try:
            yield
        except BaseException:
            if not self.skip:
                _log_elapsed("fail", started)
            raise
        if not self.skip:
            _log_elapsed("done", started)


def _log_elapsed(word: str, started: float) -> None:
    with log_context(elapsed=f"{time.monotonic() - started:.3f}"):
        job_log(logging.INFO, word)


def job_log(level: int, message: str, *args) -> None:
    """Log through `wurk`, honouring the running job's own `log_level`."""
    job_level = _job_level.get()
    if job_level is None:
        logger.log(level, message, *args)
    elif level >= job_level:
        logger._log(level, message, args)


class JobAdapter(logging.LoggerAdapter):
    """The logger a job instance gets: obeys the payload's `log_level` if it has one."""

    def isEnabledFor(self, level):
        job_level = _job_level.get()
        if job_level is None:
            return self.logger.isEnabledFor(level)
        return level >= job_level

    def log(self, level, msg, *args, **kwargs):
        if self.isEnabledFor(level):
            self.logger._log(level, msg, args, **kwargs)


class ContextFilter(logging.Filter):
    """Copies the log context onto each record (`record.wurk` and `record.wurk_text`)."""

    def filter(self, record):
        context = _context.get()
        record.wurk = context
        record.tid = context.get("tid") or tid()
        record.wurk_text = "".join(f"{k}={_text(v)} " for k, v in context.items()
                                   if k not in ("pid", "tid"))
        return True


def _text(value) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, message, context, and any exception."""

    def format(self, record):
        entry = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
                 "lvl": record.levelname, "msg": record.getMessage(),
                 "ctx": getattr(record, "wurk", {})}
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def make_formatter(fmt: str = "text") -> logging.Formatter:
    if fmt == "json":
        formatter = JsonFormatter()
        formatter.converter = time.gmtime
        return formatter
    # Heroku adds its own timestamps (Sidekiq drops them there too).
    prefix = "" if os.environ.get("DYNO") else "%(asctime)s.%(msecs)03dZ "
    formatter = logging.Formatter(
        prefix + "pid=%(process)d tid=%(tid)s %(wurk_text)s%(levelname)s: %(message)s",
        "%Y-%m-%dT%H:%M:%S")
    formatter.converter = time.gmtime
    return formatter


def configure_logging(level: int = logging.INFO, fmt: str = "text",
                      logfile: str | None = None) -> logging.Handler:
    """Give a worker process's `wurk` logger its own handler, in Wurk's format.

    `wurk` does not propagate, so a project's own LOGGING (Django's root handlers)
    never prints job lines a second time. A bare process with no root handler gets
    the same handler on the root logger, so the application's loggers show up too.
    """
    handler = logging.FileHandler(logfile) if logfile else logging.StreamHandler(sys.stdout)
    handler.addFilter(ContextFilter())
    handler.setFormatter(make_formatter(fmt))
    wurk = logging.getLogger("wurk")
    wurk.addHandler(handler)
    wurk.setLevel(level)
    wurk.propagate = False
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
        root.setLevel(level)
    return handler
