"""Prometheus: the cluster's gauges read in one round trip whatever the queues hold, read
back with prometheus_client's own parser; a worker's metrics port counting its own jobs."""

import signal
import socket
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.redis_server import free_port
from tests.support.workers import wait_until
from wurk_django.core import Client, Config, keys
from wurk_django.core.api.prometheus import cluster_exposition
from wurk_django.core.launcher import Launcher
from wurk_django.core.metrics_port import MetricsPort
from wurk_django.core.payload import dumps
from wurk_django.core.prometheus import PrometheusJobMetrics
from wurk_django.core.redis import connection_for


def samples(text: str) -> dict:
    """{(sample name, sorted labels): value} from the text exposition format."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def scrape(config) -> dict:
    body, content_type = cluster_exposition(connection_for(config), config=config)
    assert content_type.startswith("text/plain; version=")
    return samples(body.decode())


def test_a_scrape_reports_queues_sets_processes_and_counters(config, redis_client):
    client = Client(config)
    for n in range(3):
        client.push({"class": "Charge", "args": [n]})
    client.push({"class": "Report", "args": [], "queue": "low"})
    client.push({"class": "Later", "args": [], "at": time.time() + 600})
    stale_ms = int((time.time() - 90) * 1000)
    redis_client.rpush(keys.queue("low"), dumps({"class": "Old", "args": [], "jid": "o" * 24,
                                                 "enqueued_at": stale_ms}))
    redis_client.zadd(keys.RETRY, {b'{"class":"R","args":[],"jid":"r"}': time.time()})
    redis_client.zadd(keys.DEAD, {b'{"class":"D","args":[],"jid":"d"}': time.time()})
    redis_client.sadd(keys.PAUSED, "low")
    redis_client.set(keys.STAT_PROCESSED, 1234)
    redis_client.set(keys.STAT_FAILED, 56)
    launcher = Launcher(config.replace(concurrency=7))
    launcher.work_state.start("t1", "default", b'{"class":"Charge","args":[]}')
    launcher.heartbeat.beat()
    redis_client.sadd(keys.PROCESSES, "gone:1:abc")  # died without unregistering

    found = scrape(config)

    assert found[("wurk_queue_size", (("queue", "default"),))] == 3
    assert found[("wurk_queue_size", (("queue", "low"),))] == 2
    assert 89 < found[("wurk_queue_latency_seconds", (("queue", "low"),))] < 300
    assert found[("wurk_queue_latency_seconds", (("queue", "default"),))] < 60
    assert found[("wurk_queue_paused", (("queue", "low"),))] == 1
    assert found[("wurk_queue_paused", (("queue", "default"),))] == 0
    assert found[("wurk_processed_total", ())] == 1234
    assert found[("wurk_failed_total", ())] == 56
    assert found[("wurk_scheduled_jobs", ())] == 1
    assert found[("wurk_retry_jobs", ())] == 1
    assert found[("wurk_dead_jobs", ())] == 1
    assert found[("wurk_enqueued_jobs", ())] == 5
    assert found[("wurk_processes", ())] == 1  # the stale member is not a process
    assert found[("wurk_busy_threads", ())] == 1
    assert found[("wurk_threads", ())] == 7


def test_a_key_of_another_type_costs_its_own_sample_only(config, redis_client):
    Client(config).push({"class": "Charge", "args": []})
    redis_client.sadd(keys.QUEUES, "odd")
    redis_client.set(keys.queue("odd"), "not a list")
    redis_client.set(keys.DEAD, "not a sorted set")
    redis_client.sadd(keys.PROCESSES, "weird")
    redis_client.set("weird", "not a hash")

    found = scrape(config)

    assert found[("wurk_queue_size", (("queue", "default"),))] == 1
    assert ("wurk_queue_size", (("queue", "odd"),)) not in found
    assert ("wurk_dead_jobs", ()) not in found
    assert found[("wurk_retry_jobs", ())] == 0
    assert found[("wurk_processes", ())] == 0


def _fill(redis_client, queues: int, jobs_per_queue: int) -> None:
    payload = dumps({"class": "Noop", "args": [], "jid": "x" * 24,
                     "enqueued_at": int(time.time() * 1000)})
    pipe = redis_client.pipeline(transaction=False)
    for q in range(queues):
        pipe.sadd(keys.QUEUES, f"q{q}")
        for start in range(0, jobs_per_queue, 1000):
            pipe.lpush(keys.queue(f"q{q}"), *[payload] * min(1000, jobs_per_queue - start))
    pipe.execute()


def _scrape_cost(config, redis_client) -> tuple[int, int]:
    """(commands Redis ran, round trips) for one scrape, from INFO around it."""
    cluster_exposition(connection_for(config), config=config)  # this loads the script

    def reading():
        info = redis_client.info("all")
        commands = sum(stat["calls"] for name, stat in info.items()
                       if name.startswith("cmdstat_") and name != "cmdstat_info")
        return commands, info["total_writes_processed"]

    commands, writes = reading()
    cluster_exposition(connection_for(config), config=config)
    commands_after, writes_after = reading()
    # One reply write is the first INFO's own.
    return commands_after - commands, writes_after - writes - 1


def test_a_scrape_costs_one_round_trip_and_o_of_queues_commands_not_o_of_jobs(config,
                                                                            redis_client):
    _fill(redis_client, 10, 10)
    small = _scrape_cost(config, redis_client)
    redis_client.flushall()
    _fill(redis_client, 10, 10_000)
    large = _scrape_cost(config, redis_client)
    redis_client.flushall()
    _fill(redis_client, 20, 10)
    more_queues = _scrape_cost(config, redis_client)
    print(f"scrape cost (commands, round trips): 10 queues x 10 jobs {small}, "
          f"10 x 10,000 {large}, 20 x 10 {more_queues}")

    assert small == large  # a thousand times the jobs, the same work
    assert small[1] == 1 and more_queues[1] == 1
    # Each queue adds its LLEN and the LINDEX of its oldest job.
    assert more_queues[0] - small[0] == 10 * 2


def test_rate_limiters_report_their_use_and_cost_round_trips_only_when_they_exist(
        config, redis_client):
    from wurk_django.core.limiter import Limiter
    _fill(redis_client, 10, 10)
    without = _scrape_cost(config, redis_client)
    # Names no other test uses: a process registers a limiter's meta once per name.
    stripe = Limiter.concurrent("prom-stripe-acct_42", 5, wait_timeout=0)
    stripe.acquire().take()
    Limiter.concurrent("prom-erp", 50, wait_timeout=5).within_limit(lambda: None)

    found = scrape(config)
    with_limiters = _scrape_cost(config, redis_client)
    print(f"scrape cost (commands, round trips): no limiters {without}, "
          f"2 limiters {with_limiters}")

    stripe_labels = (("limiter", "prom-stripe-acct_42"), ("type", "concurrent"))
    erp_labels = (("limiter", "prom-erp"), ("type", "concurrent"))
    assert found[("wurk_limiter_used", stripe_labels)] == 1
    assert found[("wurk_limiter_limit", stripe_labels)] == 5
    assert found[("wurk_limiter_available", stripe_labels)] == 4
    assert found[("wurk_limiter_used", erp_labels)] == 0
    assert found[("wurk_limiter_held_total", erp_labels)] == 1
    assert without[1] == 1 and with_limiters[1] > 1


# --- a worker's own port ------------------------------------------------------------------

def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


@pytest.mark.slow
def test_a_worker_counts_its_own_jobs_by_class_on_its_metrics_port(start_worker, config,
                                                                     redis_client):
    port = free_port()
    worker = start_worker("-c", "2", "--metrics-port", str(port),
                          "--metrics-address", "127.0.0.1")
    client = Client(config)
    for n in range(4):
        client.push({"class": "tests.core.jobs.record", "args": [n]})
    for _ in range(2):
        client.push({"class": "tests.core.jobs.fails_without_retry", "args": ["boom"]})
    wait_until(lambda: redis_client.llen("test:results") == 4, 20, message="4 records")
    worker.wait_for_log("Serving metrics on http://127.0.0.1:")

    # The two failures are dropped (retry=False): the port's own count says they ran.
    found = wait_until(lambda: _settled(_get(f"http://127.0.0.1:{port}/metrics")), 20,
                       message="the port's counts")

    record = (("class", "tests.core.jobs.record"), ("queue", "default"))
    fails = (("class", "tests.core.jobs.fails_without_retry"), ("queue", "default"))
    assert found[("wurk_jobs_processed_total", record)] == 4
    assert ("wurk_jobs_failed_total", record) not in found
    assert found[("wurk_jobs_processed_total", fails)] == 2
    assert found[("wurk_jobs_failed_total", fails)] == 2
    assert found[("wurk_job_duration_seconds_count", record)] == 4
    assert found[("wurk_process_threads", ())] == 2


def _settled(text: str) -> dict | None:
    found = samples(text)
    fails = (("class", "tests.core.jobs.fails_without_retry"), ("queue", "default"))
    return found if found.get(("wurk_jobs_failed_total", fails)) == 2 else None


@pytest.mark.slow
def test_each_child_of_a_supervisor_listens_on_the_port_plus_its_slot(start_worker):
    port = free_port()
    while not _free(port + 1):
        port = free_port()
    worker = start_worker("-c", "1", "-p", "2", "--metrics-port", str(port),
                          "--metrics-address", "127.0.0.1")
    for child_port in (port, port + 1):
        worker.wait_for_log(f"Serving metrics on http://127.0.0.1:{child_port}/metrics", 30)
        assert "wurk_process_threads 1.0" in _get(f"http://127.0.0.1:{child_port}/metrics")
    worker.send(signal.SIGTERM)  # graceful: a SIGKILLed supervisor's children drain on
    assert worker.wait(30) == 0


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_port_waits_for_a_process_that_still_holds_it(caplog):
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    served = MetricsPort("127.0.0.1", port, busy=lambda: 3, concurrency=5)
    try:
        served.start()
        wait_until(lambda: "is in use; retrying" in caplog.text, 5, message="the retry notice")
        assert not served.bound.is_set()
        holder.close()  # the process being replaced has stopped
        assert served.bound.wait(10)
        text = _get(f"http://127.0.0.1:{port}/metrics")
        assert "wurk_process_busy_threads 3.0" in text and "wurk_process_threads 5.0" in text
    finally:
        holder.close()
        served.stop()
    with pytest.raises(OSError):
        _get(f"http://127.0.0.1:{port}/metrics")  # closed at stop


def test_the_job_counters_are_installed_only_with_a_metrics_port(redis_url):
    assert len(Config(redis_url=redis_url).server_middleware) == 0
    config = Config(redis_url=redis_url, metrics_port=free_port())
    assert PrometheusJobMetrics in config.server_middleware
    assert config.replace().server_middleware.entries == config.server_middleware.entries


@pytest.mark.parametrize("port, text", [(0, "metrics_port must be a whole number >= 1"),
                                        (70_000, "metrics_port must be a port number"),
                                        ("9100", "metrics_port must be a whole number")])
def test_a_bad_metrics_port_is_refused_naming_it(redis_url, port, text):
    from wurk_django.core.errors import ConfigurationError
    with pytest.raises(ConfigurationError, match=text) as info:
        Config(redis_url=redis_url, metrics_port=port)
    assert info.value.field == "metrics_port"

