"""What the metrics and tracing tests give their worker processes: statsd clients sending
to the UDP socket a test opened, the OpenTelemetry SDK writing spans to a file the test
reads, and the tasks they run. Switched on by environment variables
(tests/observability_settings.py reads them)."""

import json
import os

from datadog.dogstatsd import DogStatsd

from wurk_django.core import Job, wurk_task

STATSD_PORT = "WURK_TEST_STATSD_PORT"
STATSD_BROKEN = "WURK_TEST_STATSD_BROKEN"
SPANS_FILE = "WURK_TEST_SPANS_FILE"


def statsd_client():
    """A real DogStatsd client on the test's UDP port (or one whose every send raises)."""
    if os.environ.get(STATSD_BROKEN):
        return BrokenStatsd()
    return DogStatsd(host="127.0.0.1", port=int(os.environ[STATSD_PORT]),
                     disable_telemetry=True)


class BrokenStatsd:
    """A client whose every emit raises, as one whose agent went away might."""

    def _fail(self, *args, **kwargs):
        raise OSError("statsd agent unreachable")

    increment = gauge = distribution = _fail


def statsd_options(klass, job, queue):
    return {"tags": ["env:test", f"args:{len(job['args'])}"]}


def install_span_file(path: str) -> None:
    """The SDK with its console exporter writing one JSON span per line to `path`."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = open(path, "a", buffering=1)  # open while the process lives
    exporter = ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None)
                                   + "\n")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


def read_spans(path) -> list[dict]:
    """The spans a worker wrote, as `span_record`s."""
    try:
        with open(path) as spans:
            lines = [json.loads(line) for line in spans if line.strip()]
    except FileNotFoundError:
        return []
    return [{"name": span["name"], "trace_id": span["context"]["trace_id"][2:],
             "span_id": span["context"]["span_id"][2:],
             "parent_id": (span["parent_id"] or "")[2:] or None,
             "kind": span["kind"].rpartition(".")[2],
             "status": span["status"]["status_code"], "attributes": span["attributes"]}
            for span in lines]


def span_record(span) -> dict:
    """An SDK span from the in-memory exporter, in `read_spans`' shape."""
    parent = span.parent
    return {"name": span.name, "trace_id": f"{span.context.trace_id:032x}",
            "span_id": f"{span.context.span_id:016x}",
            "parent_id": f"{parent.span_id:016x}" if parent else None,
            "kind": span.kind.name, "status": span.status.status_code.name,
            "attributes": dict(span.attributes)}


class Flaky(Job):
    """Fails its first attempt and succeeds on the retry, a second later."""

    wurk_options = {"queue": "default", "retry": 2}

    @staticmethod
    def retry_in(count, exc, job):
        return 1

    def perform(self, marker):
        from tests.core.jobs import results
        if results().incr(f"test:attempts:{marker}") == 1:
            raise ValueError("first attempt fails")
        results().rpush("test:results", json.dumps(marker))


@wurk_task
def traced(marker):
    from tests.core.jobs import results
    results().rpush("test:results", json.dumps(marker))


_memory = None


def memory_exporter():
    """The SDK's in-memory exporter behind this process's global tracer provider (which
    OpenTelemetry lets a process set once)."""
    global _memory
    if _memory is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_memory))
        trace.set_tracer_provider(provider)
    _memory.clear()
    return _memory


@wurk_task(retry=5)
def saturated():
    """Always over its limit (a second slot of a mutex it holds), with a cap of one
    reschedule: its first run sends it to the dead set."""
    from wurk_django.core.limiter import Limiter
    limiter = Limiter.concurrent("obs-saturated", 1, wait_timeout=0, reschedule=1)
    limiter.within_limit(lambda: limiter.within_limit(lambda: None))
