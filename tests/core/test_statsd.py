"""StatsD: Sidekiq Pro's job metrics and named counters, and Sidekiq Enterprise's history
gauges, sent by a real DogStatsd client to a UDP socket the test opens; a client that
fails never fails a job."""

import socket
import sys
import time

import pytest

from tests.observability import STATSD_BROKEN, STATSD_PORT, statsd_client
from tests.support.workers import ROOT, wait_until
from wurk_django.core import Client, Config, keys, statsd
from wurk_django.core.fetch.reaper import Reaper
from wurk_django.core.history import HistorySnapshot
from wurk_django.core.payload import dumps
from wurk_django.core.redis import connection_for
from wurk_django.core.statsd import StatsdJobMetrics

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]
SETTINGS = {"DJANGO_SETTINGS_MODULE": "tests.observability_settings"}


class Listener:
    """A UDP socket on a free loopback port, collecting StatsD lines."""

    def __init__(self):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.05)
        self.port = self.socket.getsockname()[1]
        self.lines: list[str] = []

    def read(self) -> list[str]:
        try:
            while True:
                packet = self.socket.recv(65_535)
                self.lines += packet.decode().splitlines()
        except TimeoutError:
            return self.lines

    def wait_for(self, *prefixes: str, timeout_s: float = 20) -> list[str]:
        def arrived():
            lines = self.read()
            return all(any(line.startswith(p) for line in lines) for p in prefixes)
        wait_until(arrived, timeout_s, message=f"statsd lines {prefixes}")
        return self.lines

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def listener(monkeypatch):
    udp = Listener()
    monkeypatch.setenv(STATSD_PORT, str(udp.port))
    statsd.reset()  # a client made for another test's socket must not be reused
    yield udp
    udp.close()
    statsd.reset()


def _metric(line: str) -> tuple[str, float, str, set[str]]:
    """`name:value|type|#tag,tag` as (name, value, type, tags)."""
    head, *rest = line.split("|")
    name, _, value = head.partition(":")
    tags = next((part[1:].split(",") for part in rest if part.startswith("#")), [])
    return name, float(value), rest[0], set(tags)


@pytest.mark.slow
def test_a_worker_sends_sidekiq_pros_job_metrics(start_worker, listener, config, redis_client):
    start_worker("-c", "2", require=None, command=MANAGE, env=SETTINGS)
    Client(config).push({"class": "tests.core.jobs.record", "args": ["ok"]})
    Client(config).push({"class": "tests.core.jobs.fails_without_retry", "args": ["no"]})

    lines = listener.wait_for("sidekiq.jobs.success", "sidekiq.jobs.failure",
                              "sidekiq.jobs.perform_dist")

    by_name: dict = {}
    for line in lines:
        name, value, kind, tags = _metric(line)
        klass = next(tag for tag in tags if tag.startswith("worker:"))[len("worker:"):]
        by_name.setdefault((name, klass.rpartition(".")[2]), []).append((value, kind, tags))
    expected_tags = {"queue:default", "env:test", "args:1"}
    for klass in ("record", "fails_without_retry"):
        [(count, kind, tags)] = by_name[("sidekiq.jobs.count", klass)]
        assert (count, kind) == (1, "c") and expected_tags <= tags
        assert by_name[("sidekiq.jobs.perform", klass)][0][1] == "g"
        assert by_name[("sidekiq.jobs.perform_dist", klass)][0][1] == "d"
    assert ("sidekiq.jobs.success", "record") in by_name
    assert ("sidekiq.jobs.failure", "record") not in by_name
    assert ("sidekiq.jobs.failure", "fails_without_retry") in by_name
    assert ("sidekiq.jobs.success", "fails_without_retry") not in by_name


@pytest.mark.slow
def test_a_failing_statsd_client_never_fails_a_job(start_worker, config, redis_client):
    worker = start_worker("-c", "1", require=None, command=MANAGE,
                          env={**SETTINGS, STATSD_BROKEN: "1"})
    Client(config).push({"class": "tests.core.jobs.record", "args": ["still runs"]})

    wait_until(lambda: redis_client.lrange("test:results", 0, -1) == [b'"still runs"'], 20,
               message="the job's result")
    wait_until(lambda: redis_client.get(keys.STAT_PROCESSED) == b"1", 10,
               message="the processed count")
    assert redis_client.get(keys.STAT_FAILED) in (None, b"0")
    assert redis_client.zcard(keys.RETRY) == 0
    worker.wait_for_log("statsd increment sidekiq.jobs.count failed: OSError")


def test_a_failing_factory_leaves_the_job_running(redis_url):
    def factory():
        raise RuntimeError("no agent configured")

    config = Config(redis_url=redis_url, statsd=factory, statsd_job_metrics=True)
    job = {"class": "X", "args": [], "queue": "default", "jid": "j" * 24}
    assert config.server_middleware.invoke(config, (None, job, "default"), lambda: 42) == 42


class Recorder:
    """A statsd client that keeps what it was sent (DogStatsd's method names)."""

    def __init__(self):
        self.sent = []

    def increment(self, metric, value=1, tags=None, sample_rate=None):
        self.sent.append(("increment", metric, value, tags, sample_rate))

    def gauge(self, metric, value, tags=None, sample_rate=None):
        self.sent.append(("gauge", metric, value, tags, sample_rate))

    def distribution(self, metric, value, tags=None, sample_rate=None):
        self.sent.append(("distribution", metric, value, tags, sample_rate))


def test_the_options_hook_adds_tags_and_a_jobs_dd_rate_sets_the_sample_rate(redis_url):
    recorder = Recorder()
    config = Config(redis_url=redis_url, statsd=lambda: recorder, statsd_job_metrics=True,
                    statsd_options=lambda klass, job, queue: {"tags": ["team:billing"],
                                                              "sample_rate": 0.5})
    config.server_middleware.invoke(config, (None, {"class": "Bill", "args": []}, "q"), int)
    config.server_middleware.invoke(config, (None, {"class": "Bill", "args": [],
                                                     "dd_rate": 0.1}, "q"), int)

    counts = [sent for sent in recorder.sent if sent[1] == "sidekiq.jobs.count"]
    tags = ["worker:Bill", "queue:q", "team:billing"]
    assert counts == [("increment", "sidekiq.jobs.count", 1, tags, 0.5),
                      ("increment", "sidekiq.jobs.count", 1, tags, 0.1)]


def test_job_metrics_are_opt_in_and_need_a_client(redis_url):
    from wurk_django.core.errors import ConfigurationError
    assert StatsdJobMetrics not in Config(redis_url=redis_url,
                                          statsd=statsd_client).server_middleware
    with pytest.raises(ConfigurationError, match="statsd_job_metrics needs a statsd client"):
        Config(redis_url=redis_url, statsd_job_metrics=True)
    with pytest.raises(ConfigurationError, match="statsd: module 'tests.observability' has "
                                                 "no 'nothing'"):
        Config(redis_url=redis_url, statsd="tests.observability.nothing")


def test_the_history_snapshot_sends_sidekiq_enterprises_gauges(listener, redis_url,
                                                               redis_client):
    config = Config(redis_url=redis_url, statsd=statsd_client, retain_history_s=30)
    for n in range(3):
        Client(config).push({"class": "Charge", "args": [n]})
    redis_client.zadd(keys.RETRY, {b'{"class":"R","args":[],"jid":"r"}': time.time()})

    assert HistorySnapshot(config, connection_for(config), lambda: True).tick()

    lines = listener.wait_for("sidekiq.queue.latency")
    assert "sidekiq.enqueued:3|g" in lines and "sidekiq.retries:1|g" in lines
    assert "sidekiq.queue.size:3|g|#queue:default" in lines
    assert "sidekiq.processed:0|g" in lines and "sidekiq.busy:0|g" in lines


def test_reclaims_and_poison_pills_are_counted(listener, redis_url, redis_client):
    config = Config(redis_url=redis_url, statsd=statsd_client)
    orphan = keys.private_queue("default", "ghost-host", 4242, "n1")
    healthy = dumps({"class": "Fine", "args": [], "jid": "a" * 24, "queue": "default"})
    pill = dumps({"class": "Pill", "args": [], "jid": "b" * 24, "queue": "default"})
    redis_client.set(keys.recovered("b" * 24), 2)  # reclaimed twice already
    redis_client.lpush(orphan, healthy, pill)

    Reaper(config, connection_for(config), ["default"]).sweep_scoped()

    lines = listener.wait_for("sidekiq.jobs.recovered.fetch", "sidekiq.jobs.poison")
    assert "sidekiq.jobs.recovered.fetch:1|c|#class:Fine,queue:default" in lines
    assert "sidekiq.jobs.poison:1|c|#class:Pill,queue:default" in lines
    assert redis_client.zcard(keys.DEAD) == 1


def test_a_new_batch_is_counted_once(listener, redis_url, config):
    from wurk_django.core.batch import Batch
    counted = Config(redis_url=redis_url, statsd=statsd_client)
    with Batch(description="import", config=counted) as batch:
        Client(counted).push({"class": "Charge", "args": [1]})
    with Batch(batch.bid, config=counted):  # reopened: not a new batch
        Client(counted).push({"class": "Charge", "args": [2]})

    lines = listener.wait_for("sidekiq.batch.created")
    assert lines.count("sidekiq.batch.created:1|c") == 1


@pytest.mark.slow
def test_a_batchs_success_sends_its_duration_once(start_worker, listener, config,
                                                 redis_client):
    from wurk_django.core.batch import Batch
    with Batch(description="timed") as batch:
        for value in range(3):
            Client(config).push({"class": "tests.core.jobs.record", "args": [value]})
    start_worker("-c", "2", require=None, command=MANAGE, env=SETTINGS)

    lines = listener.wait_for("sidekiq.batch.duration_dist")
    wait_until(lambda: redis_client.hget(keys.batch(batch.bid), "success") == b"1", 15,
               message="the batch's success")
    timings = [line for line in listener.read() if line.startswith("sidekiq.batch.duration")]
    assert len(timings) == 1, lines
    name, value, kind, _ = _metric(timings[0])
    assert kind == "d" and 0 < value < 60


@pytest.mark.slow
def test_a_job_skipped_as_expired_is_counted(start_worker, listener, config, redis_client):
    start_worker("-c", "1", require=None, command=MANAGE, env=SETTINGS)
    redis_client.sadd(keys.QUEUES, "default")
    redis_client.lpush(keys.queue("default"), dumps({
        "class": "tests.core.jobs.record", "args": ["late"], "jid": "e" * 24,
        "queue": "default", "expiry": time.time() - 60}))

    lines = listener.wait_for("sidekiq.jobs.expired")
    assert "sidekiq.jobs.expired:1|c|#class:tests.core.jobs.record" in lines
    assert redis_client.llen("test:results") == 0  # skipped, not run


def test_pushes_replayed_from_the_reliable_push_buffer_are_counted(listener, redis_url):
    from wurk_django.core.errors import RedisUnavailableError
    from wurk_django.core.push_buffer import PushBuffer
    config = Config(redis_url=redis_url, statsd=statsd_client)
    sent, down, clock = [], {"now": True}, {"s": 0.0}

    def send(connection, deliveries):
        if down["now"]:
            raise RedisUnavailableError("Redis at test: connection refused")
        sent.extend(deliveries)

    buffer = PushBuffer(connection_for(config), config, send, clock=lambda: clock["s"])
    buffer.push([("one",)])
    buffer.push([("two",), ("three",)])
    down["now"] = False
    clock["s"] = 3600.0  # the back-off is over
    assert buffer.drain() and len(sent) == 3

    lines = listener.wait_for("sidekiq.jobs.recovered.push")
    assert sum(int(_metric(line)[1]) for line in lines
               if line.startswith("sidekiq.jobs.recovered.push:")) == 3


@pytest.mark.slow
def test_a_job_its_limiter_keeps_refusing_is_counted_as_rate_limited(
        start_worker, listener, config, redis_client):
    start_worker("-c", "1", require=None, command=MANAGE, env=SETTINGS)
    Client(config).push({"class": "tests.observability.saturated", "args": []})

    lines = listener.wait_for("sidekiq.jobs.rate_limited")
    assert "sidekiq.jobs.rate_limited:1|c|#worker:tests.observability.saturated" in lines
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 1, 10, message="the dead job")


@pytest.mark.slow
def test_a_job_that_cannot_be_decrypted_is_counted(start_worker, listener, redis_client):
    start_worker("-c", "1", require=None, command=MANAGE, env=SETTINGS)
    redis_client.sadd(keys.QUEUES, "default")
    redis_client.lpush(keys.queue("default"), dumps({
        "class": "tests.core.jobs.record", "args": [{"__wurk_enc__": True}],  # no key, no iv
        "jid": "c" * 24, "queue": "default", "encrypt": True}))

    lines = listener.wait_for("sidekiq.jobs.encryption_error")
    assert "sidekiq.jobs.encryption_error:1|c|#worker:tests.core.jobs.record" in lines
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 1, 10, message="the dead job")


def test_a_history_collector_sends_its_own_metrics_instead(listener, redis_url, redis_client):
    from wurk_django.core.errors import ConfigurationError

    def collector(client):
        client.gauge("shop.orders_waiting", 7, tags=["shop:eu"])

    config = Config(redis_url=redis_url, statsd=statsd_client, retain_history_s=30,
                    history_collector=collector)
    Client(config).push({"class": "Charge", "args": []})
    snapshot = HistorySnapshot(config, connection_for(config), lambda: True)
    assert snapshot.tick()

    lines = listener.wait_for("shop.orders_waiting")
    assert "shop.orders_waiting:7|g|#shop:eu" in lines
    assert not [line for line in lines if line.startswith("sidekiq.")]

    def broken(client):
        raise RuntimeError("collector bug")

    failing = config.replace(history_collector=broken)
    assert HistorySnapshot(failing, connection_for(failing), lambda: True).tick()
    assert redis_client.xlen(keys.HISTORY_METRICS) == 2  # the snapshot was still written
    with pytest.raises(ConfigurationError, match="history_collector needs a statsd client"):
        Config(redis_url=redis_url, history_collector=collector)
