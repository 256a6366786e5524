"""Log lines: Wurk's text format, with the job's context, as Sidekiq writes them."""

import logging
import re
import sys
import time

import pytest

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
