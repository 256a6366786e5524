"""Log lines: Wurk's text format, with the job's context, as Sidekiq writes them."""

import io
import logging
import queue
import re
import sys
import threading
import time

import pytest

from tests.support.workers import wait_until
from wurk_django.core import joblog
from wurk_django.core.identity import tid

# The format Sidekiq's text lines follow, as a `logging` format string: the reference
# the fast formatter must match character for character.
REFERENCE = logging.Formatter(
    "%(asctime)s.%(msecs)03dZ pid=%(process)d tid=%(tid)s %(wurk_text)s%(levelname)s: "
    "%(message)s", "%Y-%m-%dT%H:%M:%S")
REFERENCE.converter = time.gmtime


def record(message="charged %s for %d", args=("ann", 5), level=logging.INFO, exc_info=None):
    made = logging.LogRecord("wurk", level, __file__, 1, message, args, exc_info)
    joblog.ContextFilter().filter(made)
    return made


def test_a_line_carries_time_pid_tid_context_level_and_message():
    with joblog.log_context(**{"class": "Billing", "jid": "abc123", "tags": ["a", "b"]}):
        line = joblog.make_formatter("text").format(record())
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{3}}Z pid={record().process} tid={tid()} "
        r"class=Billing jid=abc123 tags=a,b INFO: charged ann for 5", line), line


@pytest.mark.parametrize("created", [0.0, 1_700_000_000.0009, 1_700_000_000.9996,
                                     1_700_000_001.5])
def test_it_matches_the_logging_format_string_exactly(created):
    formatter = joblog.TextFormatter()
    for level in (logging.INFO, logging.WARNING):
        with joblog.log_context(jid="j1"):
            made = record(level=level)
        made.created, made.msecs = created, (created - int(created)) * 1000
        assert formatter.format(made) == REFERENCE.format(made)


def test_an_exception_follows_its_line():
    try:
        raise ValueError("boom")
    except ValueError:
        made = record(level=logging.ERROR, exc_info=sys.exc_info())
    lines = joblog.TextFormatter().format(made).splitlines()
    assert lines[0].endswith("ERROR: charged ann for 5")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: boom"


def test_a_job_line_keeps_its_own_context_and_heroku_drops_the_time(monkeypatch):
    monkeypatch.setenv("DYNO", "worker.1")
    made = joblog._JobRecord("done")
    made.tid, made.wurk_text, made.wurk = "t1", "class=A jid=j2 elapsed=0.001 ", {}
    assert joblog.make_formatter("text").format(made) == (
        f"pid={made.process} tid=t1 class=A jid=j2 elapsed=0.001 INFO: done")


# --- the writer thread --------------------------------------------------------------

class FlakyStream(io.StringIO):
    """A stream whose first write fails, as a full disk or a closed pipe would."""

    def __init__(self):
        super().__init__()
        self.failures = 1

    def write(self, text):
        if self.failures:
            self.failures -= 1
            raise OSError("No space left on device")
        return super().write(text)


def queued_writer(stream) -> tuple[queue.SimpleQueue, joblog.LogWriter]:
    records = queue.SimpleQueue()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    return records, joblog.LogWriter(records, handler)


def writer_threads(before: set) -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t not in before and t.name == "wurk-log-writer" and t.is_alive()]


def test_the_writer_writes_in_batches_and_stop_writes_what_is_left():
    stream = io.StringIO()
    before = set(threading.enumerate())
    records, writer = queued_writer(stream)
    assert len(writer_threads(before)) == 1
    records.put(record("first", ()))
    wait_until(lambda: stream.getvalue() == "first\n", message="the writer's first batch")
    records.put(record("last", ()))
    writer.stop()  # before the next batch was due, or after it: "last" is written either way
    assert stream.getvalue() == "first\nlast\n"
    assert writer_threads(before) == []


def test_a_failed_write_is_reported_on_stderr_and_later_lines_still_reach_the_stream(capsys):
    stream = FlakyStream()
    records, writer = queued_writer(stream)
    try:
        records.put(record("lost with the failed write", ()))
        wait_until(lambda: stream.failures == 0, message="the failing write")
        records.put(record("written", ()))
        # Before: the writer's thread died with the write error, and no line was written
        # again for the rest of the process.
        wait_until(lambda: stream.getvalue() == "written\n", message="the next batch")
    finally:
        writer.stop()
    assert capsys.readouterr().err == ("wurk-log-writer: could not write log lines: "
                                       "OSError: No space left on device\n")
