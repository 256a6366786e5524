"""OpenTelemetry: a producer span per push and a consumer span per run, after the
messaging conventions, the W3C context in the job's top-level `traceparent` (where Ruby's
Sidekiq instrumentation puts it), one trace across the push, the run and the retry; and
nothing installed, or even imported, without the setting."""

import json
import subprocess
import sys

import pytest
from opentelemetry import trace

from tests.observability import SPANS_FILE, memory_exporter, read_spans, span_record
from tests.support.workers import ROOT, wait_until
from wurk_django.core import Client, Config, keys
from wurk_django.core.payload import dumps
from wurk_django.core.tracing import ConsumerTracing, ProducerTracing

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]
SETTINGS = {"DJANGO_SETTINGS_MODULE": "tests.observability_settings"}
TRACEPARENT = "00-{trace}-{span}-01"


@pytest.fixture
def spans():
    return memory_exporter()


@pytest.fixture
def traced_config(redis_url):
    return Config(redis_url=redis_url, opentelemetry=True)


def _queued(redis_client, queue="default") -> list[dict]:
    return [json.loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


def test_a_push_is_a_producer_span_whose_context_rides_in_the_payload(spans, traced_config,
                                                                      redis_client):
    with trace.get_tracer("tests").start_as_current_span("request") as request:
        jid = Client(traced_config).push({"class": "Charge", "args": [1], "queue": "low"})

    [job] = _queued(redis_client, "low")
    producer = next(span_record(s) for s in spans.get_finished_spans() if s.name == "send low")
    request_id = f"{request.get_span_context().span_id:016x}"
    assert producer["parent_id"] == request_id and producer["kind"] == "PRODUCER"
    version, trace_id, span_id, _flags = job["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", producer["trace_id"], producer["span_id"])
    assert producer["attributes"] == {
        "messaging.system": "sidekiq", "messaging.operation.type": "send",
        "messaging.operation.name": "send", "messaging.destination.name": "low",
        "messaging.sidekiq.job_class": "Charge", "messaging.message.id": jid}


def test_a_push_without_a_current_span_starts_a_trace(spans, traced_config, redis_client):
    Client(traced_config).push({"class": "Charge", "args": []})
    [producer] = [span_record(s) for s in spans.get_finished_spans()]
    assert producer["parent_id"] is None
    assert _queued(redis_client)[0]["traceparent"].split("-")[1] == producer["trace_id"]


@pytest.mark.slow
def test_the_run_and_its_retry_continue_the_pushs_trace(spans, traced_config, start_worker,
                                                        tmp_path, redis_client):
    span_file = tmp_path / "worker-spans.jsonl"
    start_worker("-c", "2", require=None, command=MANAGE,
                 env={**SETTINGS, SPANS_FILE: str(span_file)})
    with trace.get_tracer("tests").start_as_current_span("request") as request:
        Client(traced_config).push({"class": "tests.observability.Flaky", "args": ["f1"]})
    trace_id = f"{request.get_span_context().trace_id:032x}"
    [pushed] = [span_record(s) for s in spans.get_finished_spans() if s.name == "send default"]

    wait_until(lambda: redis_client.lrange("test:results", 0, -1) == [b'"f1"'], 30,
               message="the retry's success")
    worker = wait_until(lambda: _two_runs(span_file), 10, message="both runs' spans")

    first, second = (s for s in worker if s["name"] == "process default")
    [promoted] = [s for s in worker if s["name"] == "send default"]  # the poller's re-push
    assert {s["trace_id"] for s in worker} == {trace_id}
    assert first["parent_id"] == pushed["span_id"] and first["status"] == "ERROR"
    assert promoted["parent_id"] == pushed["span_id"] and promoted["kind"] == "PRODUCER"
    assert second["parent_id"] == promoted["span_id"] and second["status"] == "UNSET"
    assert first["kind"] == "CONSUMER" and first["attributes"]["messaging.operation.type"] == \
        "process"
    assert second["attributes"]["messaging.sidekiq.retry_count"] == 0


def _two_runs(path):
    found = read_spans(path)
    return found if sum(s["name"] == "process default" for s in found) == 2 else None


@pytest.mark.slow
def test_a_context_another_producer_wrote_is_continued(start_worker, tmp_path, redis_client):
    # Ruby's instrumentation writes the W3C header into the job hash just so.
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    span_file = tmp_path / "worker-spans.jsonl"
    start_worker("-c", "1", require=None, command=MANAGE,
                 env={**SETTINGS, SPANS_FILE: str(span_file)})
    redis_client.sadd(keys.QUEUES, "default")
    redis_client.lpush(keys.queue("default"), dumps({
        "class": "tests.observability.traced", "args": ["from ruby"], "jid": "r" * 24,
        "queue": "default", "traceparent": TRACEPARENT.format(trace=trace_id, span=parent),
        "enqueued_at": 1_700_000_000_000}))

    [run] = wait_until(lambda: read_spans(span_file), 30, message="the run's span")
    assert (run["trace_id"], run["parent_id"]) == (trace_id, parent)
    assert run["attributes"]["messaging.message.id"] == "r" * 24


def test_the_tracing_middleware_is_installed_only_with_the_setting(redis_url):
    plain = Config(redis_url=redis_url)
    assert len(plain.client_middleware) == 0 and len(plain.server_middleware) == 0
    traced = Config(redis_url=redis_url, opentelemetry=True)
    assert traced.client_middleware.entries[0][0] is ProducerTracing
    assert traced.server_middleware.entries[0][0] is ConsumerTracing


def _python(code: str, redis_url: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, check=False,
                          text=True, timeout=60, env={"REDIS_URL": redis_url,
                                                      "PATH": "/usr/bin:/bin"})


def test_without_the_setting_nothing_is_traced_even_with_the_sdk_configured(redis_url,
                                                                          redis_client):
    result = _python(
        "import sys\n"
        "from tests.observability import memory_exporter\n"
        "spans = memory_exporter()\n"
        "from wurk_django.core import Client, Config\n"
        "Client(Config()).push({'class': 'X', 'args': []})\n"
        "print(len(spans.get_finished_spans()), 'wurk_django.core.tracing' in sys.modules)\n",
        redis_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 False"
    assert "traceparent" not in _queued(redis_client)[0]


def test_the_setting_without_the_package_names_the_extra(redis_url):
    result = _python(
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if it were not installed\n"
        "from wurk_django.core import Config\n"
        "from wurk_django.core.errors import ConfigurationError\n"
        "try:\n"
        "    Config(opentelemetry=True)\n"
        "except ConfigurationError as exc:\n"
        "    print(exc.field, exc)\n", redis_url)
    assert result.stdout.strip() == ("opentelemetry opentelemetry needs the opentelemetry-api "
                                     "package: pip install 'wurk-django[otel]'"), result.stderr
