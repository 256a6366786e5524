"""Golden Sidekiq payloads: Wurk's codec must read and re-write them byte for byte, and a
payload Wurk pushes must have the spec's fields, types and order (wire-format §4, §10)."""

import re

import pytest

from wurk_django import Client, wurk_task
from wurk_django.core import keys
from wurk_django.core.payload import decode_backtrace, dumps, loads, to_datetime

# wire-format §4.5: an immediate job.
SPEC_IMMEDIATE = (
    '{"retry":true,"queue":"default","class":"billing.tasks.charge","args":[42,"EUR"],'
    '"jid":"5c8e1f0a9b3d4e6f7a8b9c0d","created_at":1739522580123,"enqueued_at":1739522580125}')

# wire-format §4.5: the same job as a `retry` member after its second failure.
SPEC_RETRY = (
    '{"retry":true,"queue":"default","class":"billing.tasks.charge","args":[42,"EUR"],'
    '"jid":"5c8e1f0a9b3d4e6f7a8b9c0d","created_at":1739522580123,'
    '"enqueued_at":1739522600980,"error_message":"card declined",'
    '"error_class":"billing.errors.Declined","failed_at":1739522580301,"retry_count":1,'
    '"retried_at":1739522601220}')

# Sidekiq 7 and older: float epoch-seconds timestamps.
SIDEKIQ7_FLOAT_TIMES = (
    '{"retry":true,"queue":"default","class":"LegacyHardJob","args":[1,"two",{"three":3.5}],'
    '"jid":"b4a577edbccf1d805744efa9","created_at":1568305717.9469912,'
    '"enqueued_at":1568305717.9470568}')

# A `schedule` member: no `at`, no `enqueued_at`.
SCHEDULED_MEMBER = (
    '{"retry":3,"queue":"low","class":"ReportWorker","args":[],'
    '"jid":"3f1e2d3c4b5a69788796a5b4","created_at":1739522580123,"tags":["reports","nightly"]}')

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

GOLDEN = [SPEC_IMMEDIATE, SPEC_RETRY, SIDEKIQ7_FLOAT_TIMES, SCHEDULED_MEMBER, ACTIVE_JOB,
          DEAD_MEMBER]


@wurk_task
def charge(invoice_id, currency):
    pass


@pytest.mark.parametrize("golden", GOLDEN)
def test_golden_payloads_round_trip_byte_for_byte(golden):
    assert dumps(loads(golden.encode("utf-8"))) == golden.encode("utf-8")


def test_timestamps_keep_their_json_types():
    modern, legacy = loads(SPEC_IMMEDIATE), loads(SIDEKIQ7_FLOAT_TIMES)
    assert type(modern["created_at"]) is int and type(modern["enqueued_at"]) is int
    assert type(legacy["created_at"]) is float and type(legacy["enqueued_at"]) is float
    assert to_datetime(modern["created_at"]).isoformat() == "2025-02-14T08:43:00.123000+00:00"
    assert to_datetime(legacy["created_at"]).year == 2019


def test_golden_values_decode_as_sidekiq_meant_them():
    dead = loads(DEAD_MEMBER)
    assert dead["args"][0] == "Grüße aus Zürich – “quoted” 🚀"
    assert dead["args"][1] == 'line1\nline2\t"q" \\ back/slash'
    assert dead["args"][2] == 2 ** 53 + 1  # ints are never squeezed through a float
    assert decode_backtrace(dead["error_backtrace"]) == [
        "app/jobs/notify_job.rb:12:in 'perform'", "sidekiq/processor.rb:202:in 'execute_job'"]
    assert "Zürich".encode() in DEAD_MEMBER.encode("utf-8")


def _field_shape(job):
    return [(key, type(value)) for key, value in job.items()]


def test_a_pushed_ruby_style_job_matches_the_spec_example(config, redis_client):
    Client().push({"class": "billing.tasks.charge", "args": [42, "EUR"]})
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    pushed, example = loads(raw), loads(SPEC_IMMEDIATE)
    assert _field_shape(pushed) == _field_shape(example)
    for key in ("retry", "queue", "class", "args"):
        assert pushed[key] == example[key]
    assert re.fullmatch(r"[0-9a-f]{24}", pushed["jid"])
    assert len(str(pushed["created_at"])) == len(str(example["created_at"])) == 13
    # Same bytes as the example once the per-push values are swapped in.
    expected = SPEC_IMMEDIATE.replace("5c8e1f0a9b3d4e6f7a8b9c0d", pushed["jid"]) \
        .replace("1739522580123", str(pushed["created_at"])) \
        .replace("1739522580125", str(pushed["enqueued_at"]))
    assert raw == expected.encode()


def test_a_pushed_python_task_matches_the_spec_example(config, redis_client):
    charge.perform_async(42, "EUR")
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    pushed, example = loads(raw), loads(SPEC_IMMEDIATE)
    assert _field_shape(pushed) == _field_shape(example)
    assert pushed["class"] == "tests.compat.test_golden_payloads.charge"
    assert (pushed["retry"], pushed["queue"], pushed["args"]) == (True, "default", [42, "EUR"])


@pytest.mark.parametrize("golden", [SPEC_RETRY, ACTIVE_JOB, SIDEKIQ7_FLOAT_TIMES])
def test_re_pushing_a_sidekiq_job_changes_only_enqueued_at(config, redis_client, golden):
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


def test_a_scheduled_push_matches_a_sidekiq_schedule_member(config, redis_client):
    job = loads(SCHEDULED_MEMBER)
    job["at"] = 4102444800.0  # 2100-01-01
    Client().push(job)
    [(member, score)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    assert member == SCHEDULED_MEMBER.encode()
    assert score == 4102444800.0
