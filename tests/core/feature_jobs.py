"""Feature hooks for tests/core/test_features.py, loaded into real worker processes with
--require: each records what it saw in Redis lists the test reads."""

import json

from tests.core.jobs import results
from wurk_django.core import Job
from wurk_django.core.features import HOOKS, DeathHook, JobHandled, JobHook


def _record(kind: str, value) -> None:
    results().rpush(f"test:{kind}", json.dumps(value))


def _outer(run, proceed):
    _record("hooks", ["outer-in", run.job["jid"], run.queue])
    try:
        return proceed()
    finally:
        _record("hooks", ["outer-out", run.job["jid"]])


def _inner(run, proceed):
    _record("hooks", ["inner", run.job["jid"]])
    if run.job["probe"] == "handle":
        raise JobHandled()  # the hook took care of it: perform never runs
    return proceed()


def _died(job, exc, config):
    _record("deaths", [job["jid"], type(exc).__name__])


HOOKS.add(JobHook("probe", 10, _outer))
HOOKS.add(JobHook("probe", 20, _inner))
HOOKS.add(DeathHook("probe", _died))


class Probed(Job):
    wurk_options = {"retry": 0}

    def perform(self, outcome):
        _record("performed", [self.jid, outcome])
        if outcome == "fail":
            raise ValueError("probe failure")
