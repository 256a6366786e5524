"""The heartbeat on its own, against real Redis: no Launcher, only what it is handed."""

import json
import time

import pytest

from tests.support.workers import wait_until
from wurk_django.core import keys
from wurk_django.core.heartbeat import PROCESS_TTL_S, Heartbeat
from wurk_django.core.metrics import Metrics
from wurk_django.core.payload import dumps
from wurk_django.core.redis import connection_for
from wurk_django.core.stats import Counters, WorkState

IDENTITY = "box.example:4242:0a1b2c3d4e5f"
INFO = {"hostname": "box.example", "pid": 4242, "tag": "tests", "concurrency": 3,
        "queues": ["default"], "labels": ["python", "wurk"], "identity": IDENTITY}


class Parts:
    """What a launcher would hand the heartbeat, kept where the test can change it."""

    def __init__(self):
        self.counters = Counters()
        self.metrics = Metrics()
        self.work = WorkState()
        self.quiet = False
        self.signals: list[str] = []


@pytest.fixture
def parts():
    return Parts()


@pytest.fixture
def make_heartbeat(config, parts):
    made = []

    def make(**changes):
        cfg = config.replace(heartbeat_interval_s=0.05, concurrency=3, **changes)
        heartbeat = Heartbeat(cfg, connection_for(cfg), IDENTITY, dumps(INFO),
                              counters=parts.counters, metrics=parts.metrics,
                              work=parts.work.snapshot, is_quiet=lambda: parts.quiet,
                              on_signal=parts.signals.append)
        made.append(heartbeat)
        return heartbeat

    yield make
    for heartbeat in made:
        heartbeat.stop()


def test_a_beat_registers_the_process_with_the_fields_sidekiq_reads(make_heartbeat, parts,
                                                                    redis_client):
    parts.counters.record(failed=False)
    parts.counters.record(failed=True)
    parts.metrics.track("tests.Job", 12, failed=False)
    payload = dumps({"class": "tests.Job", "args": [1], "jid": "a" * 24, "queue": "default"})
    parts.work.start("t1", "default", payload)
    before = time.time()
    make_heartbeat().beat()

    assert redis_client.smembers(keys.PROCESSES) == {IDENTITY.encode()}
    fields = {k.decode(): v.decode() for k, v in redis_client.hgetall(IDENTITY).items()}
    assert set(fields) == {"info", "busy", "beat", "quiet", "rss", "rtt_us", "concurrency"}
    assert json.loads(fields["info"]) == INFO
    assert fields["busy"] == "1" and fields["quiet"] == "false"
    assert fields["concurrency"] == "3"
    assert float(fields["beat"]) >= before
    assert int(fields["rss"]) > 0 and int(fields["rtt_us"]) >= 0
    assert 0 < redis_client.ttl(IDENTITY) <= PROCESS_TTL_S
    [(tid, work)] = redis_client.hgetall(keys.work(IDENTITY)).items()
    work = json.loads(work)
    assert tid == b"t1" and work["queue"] == "default"
    assert work["payload"] == payload.decode() and isinstance(work["run_at"], int)
    # The counters and metrics handed in were drained into the stats keys.
    assert redis_client.get("stat:processed") == b"2"
    assert redis_client.get("stat:failed") == b"1"
    assert parts.counters.drain() == (0, 0)
    minute_keys = list(redis_client.scan_iter("j|*"))
    assert len(minute_keys) >= 2  # the minute's hash and the ten minutes' hash
    assert {redis_client.hget(key, "tests.Job|p") for key in minute_keys} == {b"1"}


def test_the_quiet_flag_and_the_work_are_read_at_every_beat(make_heartbeat, parts,
                                                            redis_client):
    heartbeat = make_heartbeat()
    parts.work.start("t1", "default", b'{"class":"X","args":[]}')
    heartbeat.beat()
    assert redis_client.hget(IDENTITY, "busy") == b"1"
    parts.quiet = True
    parts.work.finish("t1")
    heartbeat.beat()
    assert redis_client.hget(IDENTITY, "quiet") == b"true"
    assert redis_client.hget(IDENTITY, "busy") == b"0"
    assert not redis_client.exists(keys.work(IDENTITY))


def test_the_running_loop_delivers_remote_signals_through_the_callback(make_heartbeat, parts,
                                                                       redis_client):
    registered = []
    heartbeat = make_heartbeat()
    heartbeat.config.on("heartbeat", lambda: registered.append(1))
    heartbeat.start()  # beats once at once, then every 0.05 s
    assert registered == [1]  # first registration: the supervisor's readiness signal
    redis_client.lpush(keys.signals(IDENTITY), "BOGUS")
    redis_client.lpush(keys.signals(IDENTITY), "TSTP")
    wait_until(lambda: parts.signals == ["TSTP"], 5, message="TSTP through on_signal")
    wait_until(lambda: not redis_client.exists(keys.signals(IDENTITY)), 5,
               message="the unknown signal taken off the list")
    redis_client.lpush(keys.signals(IDENTITY), "TERM")
    wait_until(lambda: parts.signals == ["TSTP", "TERM"], 5, message="TERM")
    assert registered == [1]  # later beats refresh the hash; they do not register again


def test_an_embedded_heartbeat_ignores_remote_signals(make_heartbeat, parts, redis_client):
    heartbeat = make_heartbeat(embedded=True)
    redis_client.lpush(keys.signals(IDENTITY), "TERM")
    heartbeat.beat()
    assert not redis_client.exists(keys.signals(IDENTITY))
    assert parts.signals == []


def test_clear_unregisters_and_flushes_the_last_counts(make_heartbeat, parts, redis_client):
    heartbeat = make_heartbeat()
    parts.work.start("t1", "default", b'{"class":"X","args":[]}')
    heartbeat.beat()
    parts.counters.record(failed=False)
    heartbeat.stop()
    heartbeat.clear()
    assert redis_client.smembers(keys.PROCESSES) == set()
    assert not redis_client.exists(keys.work(IDENTITY))
    assert redis_client.get("stat:processed") == b"1"
