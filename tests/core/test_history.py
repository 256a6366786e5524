"""The history snapshot: the leader alone appends the cluster's numbers to
`history:metrics` every RETAIN_HISTORY seconds, and `history.recent()` reads them back
oldest first, Sidekiq Enterprise's entries included."""

import sys
import time

import pytest

from tests.support.workers import ROOT, wait_until
from wurk_django.core import Client, Config, keys
from wurk_django.core.api import history
from wurk_django.core.history import FIELDS, HistorySnapshot
from wurk_django.core.launcher import Launcher
from wurk_django.core.redis import connection_for

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]


def test_only_the_leader_takes_a_snapshot(config, redis_client):
    for n in range(3):
        Client(config).push({"class": "Charge", "args": [n]})
    redis_client.set(keys.STAT_PROCESSED, 100)
    redis_client.set(keys.STAT_FAILED, 7)
    redis_client.zadd(keys.RETRY, {b'{"class":"R","args":[],"jid":"r"}': time.time()})
    launcher = Launcher(config.replace(concurrency=4))
    launcher.work_state.start("t1", "default", b'{"class":"Charge","args":[]}')
    launcher.heartbeat.beat()
    leading = {"now": False}
    snapshot = HistorySnapshot(config.replace(retain_history_s=30), connection_for(config),
                               lambda: leading["now"])

    assert snapshot.tick() is False
    assert redis_client.exists(keys.HISTORY_METRICS) == 0
    leading["now"] = True
    assert snapshot.tick() is True

    [(_entry_id, fields)] = redis_client.xrange(keys.HISTORY_METRICS)
    assert {name.decode(): int(value) for name, value in fields.items()} == {
        "processed": 100, "failures": 7, "enqueued": 3, "retries": 1, "dead": 0,
        "scheduled": 0, "busy": 1}
    assert [name.decode() for name in fields] == list(FIELDS)


def test_recent_reads_oldest_first_with_numbers_and_foreign_fields_kept(config, redis_client):
    redis_client.xadd(keys.HISTORY_METRICS, {"processed": 10, "failures": 1, "busy": 2},
                      id="1700000000000-0")
    # An entry another writer (Sidekiq Enterprise, a newer Wurk) made, with a field of its own.
    redis_client.xadd(keys.HISTORY_METRICS, {"processed": 12, "latency": "0.25",
                                             "note": "deploy", "odd": "nan"},
                      id="1700000030500-0")
    redis_client.xadd(keys.HISTORY_METRICS, {"processed": 15}, id="1700000061000-0")

    assert history.recent(config=config) == [
        {"at": 1_700_000_000.0, "processed": 10, "failures": 1, "busy": 2},
        {"at": 1_700_000_030.5, "processed": 12, "latency": 0.25, "note": "deploy",
         "odd": "nan"},
        {"at": 1_700_000_061.0, "processed": 15}]
    assert [entry["at"] for entry in history.recent(2, config=config)] == [1_700_000_030.5,
                                                                           1_700_000_061.0]


def test_recent_without_snapshots_is_empty_and_a_bad_limit_is_refused(config):
    assert history.recent(config=config) == []
    for limit in (0, 10_001, "5", True):
        with pytest.raises(ValueError, match="limit must be a whole number"):
            history.recent(limit, config=config)


def test_retain_history_must_be_a_positive_number_of_seconds(redis_url):
    from wurk_django.core.errors import ConfigurationError
    with pytest.raises(ConfigurationError, match="retain_history_s must be > 0") as info:
        Config(redis_url=redis_url, retain_history_s=0)
    assert info.value.field == "retain_history_s"


@pytest.mark.slow
def test_a_worker_with_retain_history_records_snapshots_as_it_leads(start_worker, config,
                                                                   redis_client):
    start_worker("-c", "2", require=None, command=MANAGE,
                 env={"DJANGO_SETTINGS_MODULE": "tests.observability_settings",
                      "WURK_TEST_RETAIN_HISTORY": "0.5"})
    for n in range(5):
        Client(config).push({"class": "tests.core.jobs.record", "args": [n]})
    wait_until(lambda: redis_client.llen("test:results") == 5, 20, message="5 jobs")

    entries = wait_until(lambda: [e for e in history.recent(config=config)
                                  if e.get("processed") == 5], 20,
                         message="a snapshot that counts the 5 jobs")
    assert entries[0]["enqueued"] == 0 and entries[0]["failures"] == 0
    assert redis_client.get(keys.LEADER) is not None
