"""OpenTelemetry tracing (`WURK["OPENTELEMETRY"]`, the `otel` extra): a producer span for
every push and a consumer span for every job run, after the messaging semantic
conventions, with the W3C trace context carried in the job itself.

Only `opentelemetry-api` is imported; the application installs and configures the SDK
(or `opentelemetry-instrument` does). Without that the API's no-op tracer makes each
span nearly free, and without the setting nothing here is installed at all.

The context goes into top-level `traceparent` / `tracestate` / `baggage` fields of the
job hash, exactly where OpenTelemetry's Ruby Sidekiq instrumentation puts it (its client
middleware injects into the job hash), so a trace crosses between Ruby and Python
processes sharing the queues. A job that already carries a context (a retry or a
scheduled job the poller moves to its queue, a job revived from the dead set) continues
that trace, so every attempt of a job hangs under the request that first pushed it.
"""

from .errors import ConfigurationError, Shutdown
from .metrics import metric_class
from .version import VERSION

INSTALL_HINT = "pip install 'wurk-django[otel]'"
CONTEXT_FIELDS = ("traceparent", "tracestate", "baggage")
# The name Sidekiq's own instrumentation reports: the same system, the same queues.
SYSTEM = "sidekiq"

_tracer = None


def require(field: str = "opentelemetry"):
    try:
        from opentelemetry import propagate, trace
    except ImportError:
        raise ConfigurationError(f"{field} needs the opentelemetry-api package: "
                                 f"{INSTALL_HINT}", field=field) from None
    return trace, propagate


def tracer():
    """Wurk's tracer; a proxy until the application sets a provider, so order is free."""
    global _tracer
    if _tracer is None:
        trace, _ = require()
        _tracer = trace.get_tracer("wurk_django", VERSION)
    return _tracer


def _attributes(job: dict, queue: str, operation: str) -> dict:
    attributes: dict[str, str | int] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.destination.name": queue,
        "messaging.sidekiq.job_class": metric_class(job),
    }
    jid = job.get("jid")
    if isinstance(jid, str):
        attributes["messaging.message.id"] = jid
    retries = job.get("retry_count")
    if isinstance(retries, int) and not isinstance(retries, bool):
        attributes["messaging.sidekiq.retry_count"] = retries
    return attributes


def _carried(job: dict):
    """The context a job carries, or None for a new job (which starts from the current one)."""
    if "traceparent" not in job:
        return None
    _, propagate = require()
    carrier = {name: job[name] for name in CONTEXT_FIELDS if isinstance(job.get(name), str)}
    return propagate.extract(carrier)


class ProducerTracing:
    """Client middleware: a `send <queue>` span around the push, its context injected."""

    def call(self, klass, job, queue, connection, next_):
        from opentelemetry.trace import SpanKind
        _, propagate = require()
        with tracer().start_as_current_span(f"send {queue}", context=_carried(job),
                                            kind=SpanKind.PRODUCER,
                                            attributes=_attributes(job, queue, "send")):
            carrier: dict = {}
            propagate.inject(carrier)
            if carrier.get("traceparent"):  # else keep what the job carries
                for name in CONTEXT_FIELDS:
                    job.pop(name, None)  # a stale tracestate must not outlive its parent
                job.update(carrier)
            return next_()


class ConsumerTracing:
    """Server middleware: a `process <queue>` span, the child of the push's span."""

    def call(self, instance, job, queue, next_):
        from opentelemetry.trace import SpanKind, Status, StatusCode
        with tracer().start_as_current_span(
                f"process {queue}", context=_carried(job), kind=SpanKind.CONSUMER,
                attributes=_attributes(job, queue, "process"), record_exception=False,
                set_status_on_exception=False) as span:
            try:
                return next_()
            except Shutdown:
                span.set_attribute("wurk.interrupted", True)  # requeued, not failed
                raise
            except BaseException as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                raise


def install(config) -> None:
    """Trace every push and job of this config; the tracing spans are outermost."""
    require()
    config.client_middleware.prepend(ProducerTracing)
    config.server_middleware.prepend(ConsumerTracing)
