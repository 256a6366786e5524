"""USR2 reopens log files, as logrotate's `postrotate` expects: a worker writing to
--logfile whose file was moved away writes to a new file at that path after USR2, one
process or a supervisor and its children."""

import json
import signal

import pytest

from tests.support.workers import children, wait_until
from wurk_django.core import Client

pytestmark = pytest.mark.slow


def text(path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.mark.parametrize("processes", [1, 2])
def test_usr2_after_logrotate_moves_the_file_writes_to_a_new_one(
        start_worker, config, redis_client, tmp_path, processes):
    log = tmp_path / "wurk.log"
    worker = start_worker("-c", "1", "-p", str(processes), "--logfile", str(log))
    wait_until(lambda: "Redis" in text(log) and (processes == 1 or len(children(worker.pid))
                                                 == processes), 20, message="the worker up")
    wait_until(lambda: text(log).count("starting") >= processes + (processes > 1), 20,
               message="every process started")
    rotated = tmp_path / "wurk.log.1"
    log.rename(rotated)  # what logrotate does; the worker still writes to the moved file

    worker.send(signal.SIGUSR2)
    writers = processes + (processes > 1)  # and the supervisor, which relays the signal
    wait_until(lambda: text(log).count("reopened 1 log file") == writers, 20,
               message="a line in the new file from every process")
    Client(config).push({"class": "tests.core.jobs.record", "args": ["after rotation"]})
    wait_until(lambda: redis_client.lrange("test:results", 0, -1) ==
               [json.dumps("after rotation").encode()], 20, message="the job")
    wait_until(lambda: "done" in text(log), 20, message="the job's lines in the new file")
    assert " done" not in text(rotated) and "reopened" not in text(rotated)
    worker.send(signal.SIGTERM)  # graceful: a supervisor's children outlive a SIGKILL a while
    assert worker.wait(30) == 0
