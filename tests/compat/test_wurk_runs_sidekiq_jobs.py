"""Jobs pushed by Ruby's own Sidekiq::Client (tests/compat/ruby/sidekiq_pushes.rb) are run
by a real Wurk worker process with the arguments Ruby gave, and a failure is booked so
that Sidekiq's RetrySet reads it back with the right times."""

import json
import time

import pytest

from tests.compat import jobs
from tests.support.ruby import require_sidekiq, run_ruby
from tests.support.workers import wait_until
from wurk_django.core import keys
from wurk_django.core.payload import loads

pytestmark = pytest.mark.slow

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")
EDGE_ARGS = ["Grüße aus Zürich – “quoted” 🚀", "line1\nline2\t\"q\" \\ back/slash",
             2 ** 53 + 1, -3.75, 0.1, 1.5e-07, False, None, [], {}, {"nested": {"list": [1, 2.5]}}]
PUSHES = [
    {"via": "perform_async", "args": EDGE_ARGS},
    {"via": "perform_in", "interval": 1, "args": ["later"]},
    {"via": "perform_bulk", "args": [[1], [2], [3]]},
    {"via": "push", "item": {"class": "tests.compat.jobs.Record", "queue": "compat",
                             "args": [{"cents": 500}, "EUR"]}},
    {"via": "push", "item": {"class": "SlowRetry", "args": ["tok_visa"]}},
]


@pytest.fixture(autouse=True)
def _sidekiq():
    require_sidekiq()


def _ran(redis_client, count: int) -> dict | None:
    """The jobs the worker ran, by jid, once there are `count` of them."""
    ran = {entry["jid"]: entry for entry in map(json.loads, redis_client.lrange(jobs.RAN, 0, -1))}
    return ran if len(ran) == count else None


def test_a_wurk_worker_runs_what_sidekiq_client_pushed(redis_url, redis_client, start_worker):
    before = time.time()
    [[edge], [later], bulk, [record], [failing]] = run_ruby(
        "sidekiq_pushes.rb", redis_url, stdin=json.dumps(PUSHES))["jids"]
    assert redis_client.zcard(keys.SCHEDULE) == 1  # perform_in waits in `schedule`
    [as_pushed] = map(loads, redis_client.lrange(keys.queue("default"), 0, -1))
    start_worker("-q", "compat", "-q", "default", "--timestamp-format", "float", *FAST,
                 require="tests.compat.jobs")
    ran = wait_until(lambda: _ran(redis_client, 6), 20, message="six jobs run")
    raw = wait_until(lambda: redis_client.zrange(keys.RETRY, 0, -1), 15, message="a retry")
    after = time.time()
    assert ran[edge] == {"class": "Compat::Charge", "jid": edge, "args": EDGE_ARGS}
    assert ran[later] == {"class": "Compat::Charge", "jid": later, "args": ["later"]}
    assert sorted(ran[jid]["args"] for jid in bulk) == [[1], [2], [3]]
    assert ran[record] == {"class": "Record", "jid": record, "args": [{"cents": 500}, "EUR"]}
    assert redis_client.zcard(keys.SCHEDULE) == 0 and redis_client.llen("queue:compat") == 0

    # The failure keeps Ruby's float created_at and enqueued_at and adds Wurk's failed_at,
    # float seconds as the worker was told: one form in the whole job, Sidekiq 6's.
    [booked] = map(loads, raw)
    assert (booked["jid"], booked["class"], booked["error_class"]) == (failing, "SlowRetry",
                                                                       "ValueError")
    for field in ("created_at", "enqueued_at", "failed_at"):
        assert type(booked[field]) is float and before <= booked[field] <= after, field
    assert (booked["created_at"], booked["enqueued_at"]) == (as_pushed["created_at"],
                                                             as_pushed["enqueued_at"])
    [retry] = run_ruby("sidekiq_reads.rb", redis_url)["retries"]
    assert retry["jid"] == failing and retry["failed_at"]["epoch"] == booked["failed_at"]
    assert retry["failed_at"]["year"] == retry["created_at"]["year"] == \
        time.gmtime(before).tm_year
