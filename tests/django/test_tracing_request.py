"""A web request's trace continues into the job it pushes: OpenTelemetry's Django
instrumentation makes the request span, Wurk's producer span is its child, and the real
worker's consumer span the producer's child; one trace across two processes."""

import sys

import pytest
from django.test import Client, override_settings

from tests.observability import SPANS_FILE, memory_exporter, read_spans, span_record
from tests.support.workers import ROOT, wait_until
from wurk_django.core.config import set_default_config

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]
MANAGE_ENV = {"DJANGO_SETTINGS_MODULE": "tests.observability_settings"}


@pytest.fixture
def instrumented():
    from opentelemetry import trace
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    spans = memory_exporter()
    instrumentor = DjangoInstrumentor()
    instrumentor.instrument(tracer_provider=trace.get_tracer_provider())
    set_default_config(None)
    yield spans
    instrumentor.uninstrument()
    set_default_config(None)


@override_settings(ROOT_URLCONF="tests.observability_urls",
                   WURK={"QUEUES": ["default"], "OPENTELEMETRY": True})
def test_request_push_and_job_form_one_trace(instrumented, start_worker, tmp_path,
                                             redis_client):
    span_file = tmp_path / "worker-spans.jsonl"
    start_worker("-c", "1", require=None, command=MANAGE,
                 env={**MANAGE_ENV, SPANS_FILE: str(span_file)})

    response = Client().get("/push", {"marker": "r1"})
    assert response.status_code == 200

    web = [span_record(span) for span in instrumented.get_finished_spans()]
    [request] = [span for span in web if span["kind"] == "SERVER"]
    [push] = [span for span in web if span["name"] == "send default"]
    [job] = wait_until(lambda: read_spans(span_file), 30, message="the job's span")
    assert push["parent_id"] == request["span_id"]
    assert job["parent_id"] == push["span_id"] and job["kind"] == "CONSUMER"
    assert request["trace_id"] == push["trace_id"] == job["trace_id"]
    assert job["attributes"]["messaging.message.id"] == response.json()["jid"]
    assert redis_client.lrange("test:results", 0, -1) == [b'"r1"']
