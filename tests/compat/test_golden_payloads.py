"""Hand-written payloads in forms the Sidekiq installed here (6.4) cannot write: Sidekiq 8's
integer-millisecond times, ActiveJob's wrapper, Pro/Enterprise keys. They are samples, not
captures; Wurk's codec must re-write them byte for byte. What a real Sidekiq wrote is in
golden/, compared with Wurk's writes by test_sidekiq_goldens.py."""

import re

import pytest

from tests.compat.goldens import job as captured_job
from wurk_django import Client, wurk_task
from wurk_django.core import keys
from wurk_django.core.payload import decode_backtrace, dumps, loads, to_datetime

# An immediate job as Sidekiq 8 writes it: integer epoch-ms created_at and enqueued_at
# (Sidekiq 8.0's changelog; Sidekiq 6 and 7 write float seconds).
SIDEKIQ8_IMMEDIATE = (
    '{"retry":true,"queue":"default","class":"billing.tasks.charge","args":[42,"EUR"],'
    '"jid":"5c8e1f0a9b3d4e6f7a8b9c0d","created_at":1739522580123,"enqueued_at":1739522580125}')

# The same job as a Sidekiq 8 `retry` member after its second failure.
SIDEKIQ8_RETRY = (
    '{"retry":true,"queue":"default","class":"billing.tasks.charge","args":[42,"EUR"],'
    '"jid":"5c8e1f0a9b3d4e6f7a8b9c0d","created_at":1739522580123,'
    '"enqueued_at":1739522600980,"error_message":"card declined",'
    '"error_class":"billing.errors.Declined","failed_at":1739522580301,"retry_count":1,'
    '"retried_at":1739522601220}')

# Rails ActiveJob through Sidekiq's adapter: nested objects, nulls, an ISO string time.
ACTIVE_JOB = (
    '{"retry":true,"queue":"mailers",'
    '"class":"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",'
    '"wrapped":"ActionMailer::MailDeliveryJob","args":[{"job_class":'
    '"ActionMailer::MailDeliveryJob","job_id":"9f8c3c52-5b1e-4d7e-9d2f-8f1a3b6c2e11",'
    '"provider_job_id":null,"queue_name":"mailers","priority":null,"arguments":'
    '["UserMailer","welcome","deliver_now",{"args":[{"_aj_globalid":"gid://app/User/42"}],'
    '"_aj_ruby2_keywords":["args"]}],"executions":0,"exception_executions":{},'
    '"locale":"en","timezone":"UTC","enqueued_at":"2025-02-14T08:43:00.123456789Z",'
    '"scheduled_at":null}],"jid":"0f6d2c1e9a8b7c6d5e4f3a2b","created_at":1739522580123,'
    '"enqueued_at":1739522580124}')

# A `dead` member: raw UTF-8 text, escapes, a compressed backtrace, Pro/Ent pass-through keys.
DEAD_MEMBER = (
    '{"retry":true,"queue":"default","class":"NotifyJob","args":["Grüße aus Zürich – '
    '“quoted” 🚀","line1\\nline2\\t\\"q\\" \\\\ back/slash",9007199254740993,-3.75,0.1,'
    '1.5e-07,false,null,[],{}],"jid":"aa11bb22cc33dd44ee55ff66","created_at":1739522580123,'
    '"enqueued_at":1739522580125,"bid":"J2Mq6uYJfOjYQw","cattr":{"tenant_id":7},'
    '"log_level":"debug","backtrace":true,"error_message":"undefined method `name\' for nil",'
    '"error_class":"NoMethodError","failed_at":1739522580301,"retry_count":25,'
    '"retried_at":1741285983000,"error_backtrace":"eJyLVkosKNDPyk8q1s/LL8lMq4wHsvWKkqwMjawy8'
    'xTUC1KL0vKLctWVdJSKM1NSszML9QuK8pNTi4vzi0DKjAwg6lIrUpNLS1JButWVYgEgMh3b"}')

SAMPLES = [SIDEKIQ8_IMMEDIATE, SIDEKIQ8_RETRY, ACTIVE_JOB, DEAD_MEMBER]


@wurk_task
def charge(invoice_id, currency):
    pass


@pytest.mark.parametrize("sample", SAMPLES)
def test_hand_written_samples_round_trip_byte_for_byte(sample):
    assert dumps(loads(sample.encode("utf-8"))) == sample.encode("utf-8")


def test_timestamps_keep_their_json_types():
    modern, legacy = loads(SIDEKIQ8_IMMEDIATE), captured_job("immediate")  # Sidekiq 8, 6.4
    assert type(modern["created_at"]) is int and type(modern["enqueued_at"]) is int
    assert type(legacy["created_at"]) is float and type(legacy["enqueued_at"]) is float
    assert to_datetime(modern["created_at"]).isoformat() == "2025-02-14T08:43:00.123000+00:00"
    assert abs(to_datetime(legacy["created_at"]).timestamp() - legacy["created_at"]) < 1e-6


def test_sample_values_decode_as_sidekiq_meant_them():
    dead = loads(DEAD_MEMBER)
    assert dead["args"][0] == "Grüße aus Zürich – “quoted” 🚀"
    assert dead["args"][1] == 'line1\nline2\t"q" \\ back/slash'
    assert dead["args"][2] == 2 ** 53 + 1  # ints are never squeezed through a float
    assert decode_backtrace(dead["error_backtrace"]) == [
        "app/jobs/notify_job.rb:12:in 'perform'", "sidekiq/processor.rb:202:in 'execute_job'"]
    # Written back as raw UTF-8 with JSON's short escapes, as Ruby's JSON.generate writes,
    # not Python's default \u escapes.
    assert dumps(dead["args"][:2]) == \
        '["Grüße aus Zürich – “quoted” 🚀","line1\\nline2\\t\\"q\\" \\\\ back/slash"]'.encode()


def _field_shape(job):
    return [(key, type(value)) for key, value in job.items()]


def test_a_pushed_ruby_style_job_matches_the_sidekiq_8_form(config, redis_client):
    Client().push({"class": "billing.tasks.charge", "args": [42, "EUR"]})
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    pushed, example = loads(raw), loads(SIDEKIQ8_IMMEDIATE)
    assert _field_shape(pushed) == _field_shape(example)
    for key in ("retry", "queue", "class", "args"):
        assert pushed[key] == example[key]
    assert re.fullmatch(r"[0-9a-f]{24}", pushed["jid"])
    assert len(str(pushed["created_at"])) == 13  # integer ms, the default form
    # Same bytes as the example once the per-push values are swapped in.
    expected = SIDEKIQ8_IMMEDIATE.replace("5c8e1f0a9b3d4e6f7a8b9c0d", pushed["jid"]) \
        .replace("1739522580123", str(pushed["created_at"])) \
        .replace("1739522580125", str(pushed["enqueued_at"]))
    assert raw == expected.encode()


def test_a_pushed_python_task_matches_the_sidekiq_8_form(config, redis_client):
    charge.perform_async(42, "EUR")
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    pushed, example = loads(raw), loads(SIDEKIQ8_IMMEDIATE)
    assert _field_shape(pushed) == _field_shape(example)
    assert pushed["class"] == "tests.compat.test_golden_payloads.charge"
    assert (pushed["retry"], pushed["queue"], pushed["args"]) == (True, "default", [42, "EUR"])


@pytest.mark.parametrize("golden", [SIDEKIQ8_RETRY, ACTIVE_JOB])
def test_re_pushing_a_sidekiq_8_job_changes_only_enqueued_at(config, redis_client, golden):
    # What the poller does when it promotes a retry: the payload goes back through push.
    original = loads(golden)
    queue = original["queue"]
    jid = Client().push(loads(golden))
    assert jid == original["jid"]
    [raw] = redis_client.lrange(keys.queue(queue), 0, -1)
    pushed = loads(raw)
    assert type(pushed["enqueued_at"]) is int
    assert pushed["enqueued_at"] != original["enqueued_at"]
    pushed["enqueued_at"] = original["enqueued_at"]
    assert dumps(pushed) == golden.encode("utf-8")
