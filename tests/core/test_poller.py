"""The scheduled/retry poller: atomic pop-by-score, client push, and its sleep formula."""

import threading

from wurk_django.core import Client, keys
from wurk_django.core.payload import dumps, loads
from wurk_django.core.redis import connection_for
from wurk_django.core.scheduled import Enqueuer, Poller


def test_pop_by_score_takes_only_due_members_lowest_first(config, redis_client):
    redis_client.zadd(keys.SCHEDULE, {b"b": 20.0, b"a": 10.0, b"future": 9e12})
    script = connection_for(config).script("pop_by_score")
    assert script(keys=[keys.SCHEDULE], args=["100.5"]) == b"a"
    assert script(keys=[keys.SCHEDULE], args=["100.5"]) == b"b"
    assert script(keys=[keys.SCHEDULE], args=["100.5"]) is None
    assert redis_client.zrange(keys.SCHEDULE, 0, -1) == [b"future"]


def test_script_survives_a_script_flush(config, redis_client):
    script = connection_for(config).script("pop_by_score")
    redis_client.script_flush()
    redis_client.zadd(keys.RETRY, {b"x": 1.0})
    assert script(keys=[keys.RETRY], args=["2.0"]) == b"x"


def test_two_enqueuers_never_promote_the_same_job(config, redis_client):
    members = {dumps({"class": "Some", "args": [i], "queue": "q", "jid": f"{i:024x}",
                      "retry": True, "created_at": 1}): 1.0 for i in range(300)}
    redis_client.zadd(keys.SCHEDULE, members)
    connection = connection_for(config)
    enqueuers = [Enqueuer(config, connection, Client(config, connection)) for _ in range(3)]
    threads = [threading.Thread(target=e.enqueue_jobs) for e in enqueuers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queued = [loads(raw) for raw in redis_client.lrange("queue:q", 0, -1)]
    assert len(queued) == 300
    assert len({job["jid"] for job in queued}) == 300
    promoted = queued[0]
    assert promoted["created_at"] == 1 and isinstance(promoted["enqueued_at"], int)


def test_a_malformed_scheduled_member_goes_to_dead(config, redis_client):
    redis_client.zadd(keys.SCHEDULE, {b"{broken": 1.0})
    connection = connection_for(config)
    Enqueuer(config, connection, Client(config, connection)).enqueue_jobs()
    assert redis_client.zrange(keys.DEAD, 0, -1) == [b"{broken"]


def test_poll_interval_scales_with_the_cluster(config, redis_client):
    connection = connection_for(config)
    poller = Poller(config, connection, Client(config, connection))
    draws = [poller.random_poll_interval_s() for _ in range(500)]
    assert all(2.5 <= d <= 7.5 for d in draws)  # one process: 5 s +/- 50 %
    redis_client.sadd(keys.PROCESSES, *[f"h:{i}:n" for i in range(4)])
    draws = [poller.random_poll_interval_s() for _ in range(500)]
    assert all(10 <= d <= 30 for d in draws)  # four processes: 20 s +/- 50 %
    redis_client.sadd(keys.PROCESSES, *[f"h:{i}:n" for i in range(4, 12)])
    draws = [poller.random_poll_interval_s() for _ in range(500)]
    assert all(0 <= d <= 120 for d in draws) and max(draws) > 60  # 12 processes: 0..2x 60 s
    redis_client.delete(keys.PROCESSES)
    fixed = Poller(config.replace(poll_interval_average_s=2), connection, None)
    assert all(1 <= fixed.random_poll_interval_s() <= 3 for _ in range(100))


def test_initial_wait_is_ten_seconds_plus_jitter(config):
    poller = Poller(config, None, None)
    waits = [poller.initial_wait_s() for _ in range(200)]
    assert all(10 <= w <= 15 for w in waits)
    quick = Poller(config.replace(poll_interval_average_s=1), None, None)
    assert all(0 <= quick.initial_wait_s() <= 1 for _ in range(200))
