"""Job logging: the per-job log context, start/done/fail lines, text and JSON formats.

Every job writes two lines, so this is on the hot path: a job's context is rendered
to text once, and a worker's handler runs on its own thread behind a queue, so
processor threads never wait for each other's writes.
"""

import atexit
import contextlib
import json
import logging
import logging.handlers
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from .identity import pid, tid
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
          "warning": logging.WARNING, "error": logging.ERROR, "fatal": logging.CRITICAL}
_HIDDEN_IN_TEXT = ("pid", "tid")


class Context:
    """The fields added to log lines, with their text rendered once, on first use."""

    __slots__ = ("fields", "_text")

    def __init__(self, fields: dict):
        self.fields = fields
        self._text: str | None = None

    def text(self) -> str:
        if self._text is None:
            self._text = "".join(f"{k}={_text(v)} " for k, v in self.fields.items()
                                 if k not in _HIDDEN_IN_TEXT)
        return self._text

    def extended(self, **fields: Any) -> "Context":
        return Context({**self.fields, **fields})


_EMPTY = Context({})
_context: ContextVar[Context] = ContextVar("wurk_log_context", default=_EMPTY)
_job_level: ContextVar[int | None] = ContextVar("wurk_job_log_level", default=None)


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add fields to every log line written inside the block (this thread or task only)."""
    token = _context.set(_context.get().extended(**fields))
    try:
        yield
    finally:
        _context.reset(token)


def current_context() -> dict:
    return _context.get().fields


def display_class(job: dict) -> str:
    return str(job.get("display_class") or job.get("wrapped") or job.get("class"))


class JobLogger:
    """Sets each job's context and log level, and logs its start and its end."""

    def __init__(self, config):
        self.config = config
        self.skip = config.skip_default_job_logging
        self.pid = os.getpid()

    def context_for(self, job: dict) -> dict:
        fields = {"pid": self.pid, "tid": tid(), "class": display_class(job),
                  "jid": job.get("jid")}
        for key in self.config.logged_job_attributes:
            if key in job:
                fields[key] = job[key]
        return fields

    def enter(self, job: dict) -> tuple:
        """Set the job's context and level; pass the result to `leave()`."""
        level = LEVELS.get(str(job["log_level"]).lower()) if "log_level" in job else None
        return (_context.set(_context.get().extended(**self.context_for(job))),
                _job_level.set(level))

    @staticmethod
    def leave(tokens: tuple) -> None:
        _job_level.reset(tokens[1])
        _context.reset(tokens[0])

    def start(self) -> float:
        if not self.skip and _enabled(logging.INFO):
            _emit("start")
        return time.monotonic()

    def finish(self, started: float, failed: bool) -> None:
        if self.skip or not _enabled(logging.INFO):
            return
        _emit("fail" if failed else "done", elapsed=f"{time.monotonic() - started:.3f}")


def _enabled(level: int) -> bool:
    job_level = _job_level.get()
    return logger.isEnabledFor(level) if job_level is None else level >= job_level


class _JobRecord(logging.LogRecord):
    """A start/done/fail line. Its origin is known, so the work LogRecord does to find it
    (path splitting, thread and process lookups) is done once per process, not per line."""

    def __init__(self, message: str):  # LogRecord.__init__ skipped on purpose (see above)
        now = time.time_ns()
        self.__dict__.update(_JOB_RECORD_STATIC)
        self.msg = message
        self.created = now / 1e9
        self.msecs = (now % 1_000_000_000) // 1_000_000
        self.relativeCreated = (now - _LOGGING_STARTED_NS) / 1e6
        self.thread = threading.get_ident()
        self.threadName = threading.current_thread().name
        self.process = pid()


# logging's start time: float seconds before Python 3.13, integer ns since.
_LOGGING_STARTED_NS = (logging._startTime  # type: ignore[attr-defined]
                       if isinstance(logging._startTime, int)  # type: ignore[attr-defined]
                       else logging._startTime * 1e9)  # type: ignore[attr-defined]
_JOB_RECORD_STATIC = {
    "name": "wurk", "args": (), "levelname": "INFO", "levelno": logging.INFO,
    "pathname": __file__, "filename": os.path.basename(__file__), "module": __name__,
    "exc_info": None, "exc_text": None, "stack_info": None, "lineno": 0,
    "funcName": "job", "processName": "MainProcess", "taskName": None,
}


def _emit(message: str, **extra) -> None:
    """A job's own start/done/fail line, built directly: its caller is known, so the
    stack walk `logging` does for every record (findCaller) is skipped."""
    context = _context.get()
    record = _JobRecord(message)
    record.wurk = {**context.fields, **extra} if extra else context.fields
    record.tid = context.fields.get("tid") or tid()
    record.wurk_text = context.text() + "".join(f"{k}={v} " for k, v in extra.items())
    logger.handle(record)


def job_log(level: int, message: str, *args) -> None:
    """Log through `wurk`, honouring the running job's own `log_level`."""
    if _enabled(level):
        logger._log(level, message, args)


class JobAdapter(logging.LoggerAdapter):
    """The logger a job instance gets: obeys the payload's `log_level` if it has one."""

    def isEnabledFor(self, level):
        return _enabled(level)

    def log(self, level, msg, *args, **kwargs):
        if self.isEnabledFor(level):
            self.logger._log(level, msg, args, **kwargs)


class ContextFilter(logging.Filter):
    """Copies the log context onto each record (`record.wurk`, `record.wurk_text`).

    It must run on the thread that logs, since the context lives in a ContextVar.
    """

    def filter(self, record):
        if not hasattr(record, "wurk_text"):  # job lines come with theirs (`_emit`)
            context = _context.get()
            record.wurk = context.fields
            record.tid = context.fields.get("tid") or tid()
            record.wurk_text = context.text()
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
        elif getattr(record, "exc_text", None):
            entry["exc"] = record.exc_text
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """Sidekiq's text line: `<UTC time> pid=… tid=… <context>LEVEL: message`.

    Built with one f-string, and the time's second rendered once per second, rather
    than through `logging`'s format-string machinery: each job writes two lines.
    """

    def __init__(self, with_time: bool = True):
        super().__init__()
        self.with_time = with_time
        self._stamp: tuple[int, str] = (-1, "")  # replaced whole: safe across threads

    def format(self, record):
        record.message = record.getMessage()
        line = (f"pid={record.process} tid={getattr(record, 'tid', '')} "
                f"{getattr(record, 'wurk_text', '')}{record.levelname}: {record.message}")
        if self.with_time:
            second = int(record.created)
            stamp = self._stamp
            if stamp[0] != second:
                stamp = self._stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%S",
                                                             time.gmtime(second)))
            line = f"{stamp[1]}.{int(record.msecs):03d}Z {line}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line = f"{line}\n{record.exc_text}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


def make_formatter(fmt: str = "text") -> logging.Formatter:
    if fmt == "json":
        formatter = JsonFormatter()
        formatter.converter = time.gmtime
        return formatter
    # Heroku adds its own timestamps (Sidekiq drops them there too).
    return TextFormatter(with_time=not os.environ.get("DYNO"))


class _ContextQueueHandler(logging.handlers.QueueHandler):
    """Hands records to the writer thread with their context already attached."""

    def prepare(self, record):
        # Keep the record as is (the writer formats it), but render what cannot cross
        # threads: the message arguments and the traceback.
        record.msg = record.getMessage()
        record.args = None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record


class LogWriter:
    """Writes queued records from its own thread (a TimerLoop), a batch at a time.

    It wakes on a short timer rather than for each record, so a job's two lines cost the
    processor thread a queue put and no thread switch, and a batch costs one flush.
    """

    INTERVAL_S = 0.05
    STOP_TIMEOUT_S = 5.0

    def __init__(self, records: queue.SimpleQueue, handler: logging.StreamHandler):
        self.records = records
        self.handler = handler
        self._loop = TimerLoop("wurk-log-writer", self.INTERVAL_S, self.drain,
                               on_error=self._write_failed)
        self._loop.start()

    @staticmethod
    def _write_failed(exc: BaseException) -> None:
        # Not through `logging`: the line would come back to this writer. stderr, as a
        # logging handler's own handleError does; the next batch is tried again.
        sys.stderr.write(f"wurk-log-writer: could not write log lines: "
                         f"{type(exc).__name__}: {exc}\n")

    def drain(self) -> None:
        lines = []
        while True:
            try:
                record = self.records.get_nowait()
            except queue.Empty:
                break
            try:
                lines.append(self.handler.format(record) + "\n")
            except Exception:  # noqa: BLE001 - one bad record must not silence the rest
                self.handler.handleError(record)
        if lines:
            handler = self.handler
            with handler.lock:  # type: ignore[union-attr]  # created by Handler.__init__
                handler.stream.write("".join(lines))
                handler.flush()

    def stop(self) -> None:
        """Stop the thread, then write what it left; a thread stuck in a write keeps the
        rest (draining beside it would wait on its lock, at exit)."""
        if self._loop.stop(self.STOP_TIMEOUT_S):
            try:
                self.drain()
            except Exception as exc:  # noqa: BLE001 - as the loop's on_error: report, at exit
                self._write_failed(exc)


_writer: LogWriter | None = None


def _start_writer(handler: logging.handlers.QueueHandler,
                  writer: logging.StreamHandler) -> None:
    global _writer
    handler.queue = queue.SimpleQueue()
    _writer = LogWriter(handler.queue, writer)


def stop_logging() -> None:
    """Write out every queued line (at exit; os._exit skips atexit, so call it first)."""
    global _writer
    if _writer is not None:
        _writer.stop()
        _writer = None


atexit.register(stop_logging)


def reopen_log_files() -> int:
    """Reopen every log file this process writes, for USR2 after logrotate has moved
    them: Wurk's `--logfile` and each `logging.FileHandler` of the application's loggers
    (Sidekiq reopens every file it has open for appending). Returns how many."""
    handlers = {id(handler): handler for handler in _file_handlers()}
    return sum(_reopen(handler) for handler in handlers.values())


def _file_handlers():
    if _writer is not None and isinstance(_writer.handler, logging.FileHandler):
        yield _writer.handler
    loggers = [logging.getLogger(), *(item for item in logging.Logger.manager.loggerDict.values()
                                      if isinstance(item, logging.Logger))]
    for each in loggers:
        yield from (h for h in each.handlers if isinstance(h, logging.FileHandler))


def _reopen(handler: logging.FileHandler) -> bool:
    with handler.lock:  # type: ignore[union-attr]  # the writer thread writes under it
        old = handler.stream
        if old is None:
            return False  # opened lazily (delay=True): its first line opens the new file
        try:
            handler.stream = handler._open()
        except OSError as exc:
            sys.stderr.write(f"wurk: could not reopen {handler.baseFilename}: {exc}; "
                             f"still writing to the old file\n")
            return False
        old.close()
        return True


def configure_logging(level: int = logging.INFO, fmt: str = "text",
                      logfile: str | None = None) -> logging.Handler:
    """Give a worker process's `wurk` logger its own handler, in Wurk's format.

    `wurk` does not propagate, so a project's own LOGGING (Django's root handlers)
    never prints job lines a second time. A bare process with no root handler gets
    the same handler on the root logger, so the application's loggers show up too.
    """
    writer = logging.FileHandler(logfile) if logfile else logging.StreamHandler(sys.stdout)
    writer.setFormatter(make_formatter(fmt))
    handler = _ContextQueueHandler(queue.SimpleQueue())
    handler.addFilter(ContextFilter())
    _start_writer(handler, writer)
    # A forked worker (--processes) inherits the queue but not the writer thread.
    os.register_at_fork(after_in_child=lambda: _start_writer(handler, writer))
    wurk = logging.getLogger("wurk")
    wurk.addHandler(handler)
    wurk.setLevel(level)
    wurk.propagate = False
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
        root.setLevel(level)
    return handler
