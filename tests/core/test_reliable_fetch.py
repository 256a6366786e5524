"""Reliable fetch against real Redis: private lists, piggybacked acks, pause, requeue."""

import os
import sys
import threading

import pytest
import redis

from tests.core import jobs
from tests.support.redis_server import RedisServer
from tests.support.workers import wait_until
from wurk_django.core import keys
from wurk_django.core.api.queues import Queue
from wurk_django.core.config import Config
from wurk_django.core.errors import RedisUnavailableError
from wurk_django.core.fetch.reliable import ReliableFetch
from wurk_django.core.identity import hostname, process_nonce
from wurk_django.core.payload import dumps
from wurk_django.core.redis import close_connections, connection_for


@pytest.fixture
def make_fetcher(config):
    made = []

    def make(queues=("default",)):
        cfg = Config(redis_url=config.redis_url, queues=queues)
        fetcher = ReliableFetch(cfg, cfg.capsules_[0], connection_for(cfg))
        made.append(fetcher)
        return fetcher

    yield make
    for fetcher in made:
        fetcher.close()


def job(n, queue="default"):
    return dumps({"class": "Some", "args": [n], "queue": queue, "jid": f"{n:024x}"})


def private(queue="default"):
    return f"queue:{queue}|{hostname()}|{os.getpid()}|{process_nonce()}|0"


def test_fetch_moves_the_oldest_job_into_this_process_private_list(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1), job(2))
    fetcher = make_fetcher()
    unit = fetcher.retrieve_work()
    assert unit.job == job(1) and unit.queue == "default"
    assert unit.private_queue == private()
    assert redis_client.lrange(private(), 0, -1) == [job(1)]
    assert redis_client.lrange("queue:default", 0, -1) == [job(2)]


def test_ack_rides_with_the_next_fetch_and_clears_the_poison_counter(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1), job(2))
    fetcher = make_fetcher()
    first = fetcher.retrieve_work()
    first.jid = f"{1:024x}"
    redis_client.set(keys.recovered(first.jid), 2)
    first.acknowledge()
    assert redis_client.lrange(private(), 0, -1) == [job(1)]  # held, not yet sent
    before = redis_client.info("commandstats")
    second = fetcher.retrieve_work()
    after = redis_client.info("commandstats")
    assert second.job == job(2)
    assert redis_client.lrange(private(), 0, -1) == [job(2)]
    assert not redis_client.exists(keys.recovered(first.jid))
    used = {name: after[name]["calls"] - before.get(name, {"calls": 0})["calls"]
            for name in after if after[name]["calls"] != before.get(name, {"calls": 0})["calls"]}
    used.pop("cmdstat_info", None)
    assert used == {"cmdstat_lrem": 1, "cmdstat_del": 1, "cmdstat_lmove": 1}


def test_held_acks_are_flushed_before_blocking(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1))
    fetcher = make_fetcher()
    unit = fetcher.retrieve_work()
    unit.acknowledge()
    assert fetcher.retrieve_work() is None  # empty queue: flushes, then BLMOVE for 2 s
    assert not redis_client.exists(private())


def test_flush_acks_sends_every_threads_acks(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1), job(2))
    fetcher = make_fetcher()
    units = []

    def take_one():
        # A thread that waited behind another's fetch may come back empty-handed.
        unit = None
        while unit is None:
            unit = fetcher.retrieve_work()
        units.append(unit)

    takers = [threading.Thread(target=take_one) for _ in range(2)]
    for thread in takers:
        thread.start()
    for thread in takers:
        thread.join()
    ackers = [threading.Thread(target=unit.acknowledge) for unit in units]
    for acker in ackers:
        acker.start()
    for acker in ackers:
        acker.join()
    assert redis_client.llen(private()) == 2  # held by two threads that fetch no more
    fetcher.flush_acks()
    assert redis_client.llen(private()) == 0


def test_one_round_trip_fetches_for_every_waiting_thread(make_fetcher, redis_client):
    redis_client.lpush("queue:default", *[job(n) for n in range(8)])
    fetcher = make_fetcher()
    fetcher._waiting = 7  # as if seven idle threads were parked behind this fetch
    first = fetcher.retrieve_work()
    assert first.job == job(0)
    handed = [fetcher._handoff.get_nowait() for _ in range(7)]
    assert [unit.job for unit in handed] == [job(n) for n in range(1, 8)]
    for unit in handed:
        fetcher._handoff.put(unit)
    assert redis_client.llen(private()) == 8 and redis_client.llen("queue:default") == 0
    fetcher._waiting = 0
    fetcher.return_prefetched()  # at stop, jobs no thread started go back to the queue
    assert sorted(redis_client.lrange("queue:default", 0, -1)) == [job(n) for n in range(1, 8)]
    assert redis_client.lrange(private(), 0, -1) == [job(0)]


def test_rest_of_the_queues_in_one_script_call_in_order(make_fetcher, redis_client):
    redis_client.lpush("queue:low", job(3, "low"))
    fetcher = make_fetcher(("critical", "default", "low"))
    unit = fetcher.retrieve_work()
    assert unit.queue == "low" and unit.private_queue == private("low")
    redis_client.lpush("queue:default", job(2))
    redis_client.lpush("queue:low", job(4, "low"))
    assert fetcher.retrieve_work().queue == "default"  # strict: default before low


def test_paused_queues_are_skipped(make_fetcher, redis_client):
    redis_client.lpush("queue:critical", job(1, "critical"))
    redis_client.lpush("queue:default", job(2))
    redis_client.sadd(keys.PAUSED, "critical")
    fetcher = make_fetcher(("critical", "default"))
    assert fetcher.retrieve_work().queue == "default"
    redis_client.srem(keys.PAUSED, "critical")
    fetcher.invalidate_paused()
    assert fetcher.retrieve_work().queue == "critical"


def test_a_pause_through_the_api_is_seen_at_once_by_this_process(make_fetcher, config,
                                                                 redis_client):
    fetcher = make_fetcher(("critical", "default"))
    assert fetcher.paused_queues() == frozenset()  # cached for the next 2 s
    redis_client.lpush("queue:critical", job(1, "critical"))
    redis_client.lpush("queue:default", job(2))
    Queue("critical", config).pause()
    assert fetcher.retrieve_work().queue == "default"
    Queue("critical", config).unpause()
    assert fetcher.retrieve_work().queue == "critical"


def test_a_fetcher_parked_on_a_queue_paused_here_gives_its_job_back(make_fetcher, config,
                                                                    redis_client):
    fetcher = make_fetcher()
    got = []
    parked = threading.Thread(target=lambda: got.append(fetcher.retrieve_work()))
    parked.start()
    wait_until(lambda: redis_client.info("clients")["blocked_clients"] == 1, 5,
               message="the fetcher parked in BLMOVE")
    Queue("default", config).pause()
    redis_client.lpush("queue:default", job(3))
    parked.join(10)
    assert got == [None]
    assert redis_client.lrange("queue:default", 0, -1) == [job(3)]
    assert not redis_client.exists(private())


def test_requeue_moves_back_only_what_is_still_private(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1), job(2))
    fetcher = make_fetcher()
    first, second = fetcher.retrieve_work(), fetcher.retrieve_work()
    # A racing ack already removed `first`: requeueing it must not duplicate it.
    redis_client.lrem(first.private_queue, 1, first.job)
    fetcher.bulk_requeue([first, second])
    assert redis_client.lrange("queue:default", 0, -1) == [job(2)]
    assert not redis_client.exists(private())


def test_requeue_survives_a_script_flush(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1))
    fetcher = make_fetcher()
    unit = fetcher.retrieve_work()
    redis_client.script_flush()
    fetcher.bulk_requeue([unit])
    assert redis_client.lrange("queue:default", 0, -1) == [job(1)]


FORK_PROBE = """
import os, sys
from wurk_django.core.config import Config
from wurk_django.core.fetch.reliable import ReliableFetch
from wurk_django.core.redis import connection_for
config = Config(redis_url=sys.argv[1])
fetcher = ReliableFetch(config, config.capsules_[0], connection_for(config))
print(fetcher.private_queue("default"))
read_fd, write_fd = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write_fd, fetcher.private_queue("default").encode())
    os._exit(0)
os.waitpid(pid, 0)
print(pid, os.read(read_fd, 1000).decode())
"""


def test_a_forked_child_claims_into_its_own_list(redis_url):
    # Forked in a fresh, single-threaded interpreter: forking the threaded test process
    # is unsafe and warns on Python 3.12+.
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", FORK_PROBE, redis_url], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    parent_name, child_pid, child_name = out[0], int(out[1]), out[2]
    host, nonce = parent_name.split("|")[1], parent_name.split("|")[3]
    assert child_name == f"queue:default|{host}|{child_pid}|{nonce}|0"  # nonce inherited
    assert child_name != parent_name


# --- acks while the fetcher waits ------------------------------------------------------

def blmove_calls(redis_client) -> int:
    """BLMOVEs that have returned: Redis counts a blocked command when it completes."""
    return redis_client.info("commandstats").get("cmdstat_blmove", {}).get("calls", 0)


def parked_in_blmove(redis_client) -> bool:
    return any(c["cmd"] == "blmove" and "b" in c["flags"] for c in redis_client.client_list())


def fresh_block(redis_client, after: int) -> int | None:
    """The count of finished BLMOVEs, once one has finished since `after` and the next
    is parked: that block has only just begun."""
    calls = blmove_calls(redis_client)
    if calls > after and parked_in_blmove(redis_client) and blmove_calls(redis_client) == calls:
        return calls
    return None


def test_a_job_finishing_while_the_fetcher_is_parked_is_acked_before_the_block_ends(
        config, start_worker, redis_client):
    jobs.gated_sync.perform_async("ack")
    start_worker("-c", "2")  # one thread runs the job, the other fetches on an empty queue
    wait_until(lambda: redis_client.llen("test:started") == 1, 15, message="the job running")
    [private_list] = redis_client.scan_iter("queue:default|*")
    assert redis_client.llen(private_list) == 1
    # Act at the start of a block, so the whole 2 s block is still ahead.
    before = blmove_calls(redis_client)
    calls = wait_until(lambda: fresh_block(redis_client, before), 15,
                       message="a BLMOVE parked afresh")
    redis_client.rpush("test:gate:ack", "open")
    wait_until(lambda: redis_client.llen(private_list) == 0, 15, message="the ack")
    # The BLMOVE that was parked when the job finished has still not returned: the ack
    # went out at once instead of waiting for the fetcher's next round trip.
    assert blmove_calls(redis_client) == calls and parked_in_blmove(redis_client)
    assert redis_client.lrange("test:results", 0, -1) == [b'{"sync": "ack", "opened": true}']


def in_event_wait(thread: threading.Thread) -> bool:
    """True while `thread` is blocked in a threading wait (an Event, a Condition)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__:
            return True
        frame = frame.f_back
    return False


def test_an_ack_while_every_queue_is_paused_is_sent_at_once(make_fetcher, redis_client):
    redis_client.lpush("queue:default", job(1))
    fetcher = make_fetcher()
    unit = fetcher.retrieve_work()
    redis_client.sadd(keys.PAUSED, "default")
    fetcher.invalidate_paused()
    returned = threading.Event()
    # The fetching thread now holds the fetch for up to 2 s with nothing to fetch.
    idle = threading.Thread(target=lambda: (fetcher.retrieve_work(), returned.set()))
    idle.start()
    try:
        wait_until(lambda: in_event_wait(idle), 5, message="the fetcher waiting out the pause")
        unit.acknowledge()
        wait_until(lambda: not redis_client.exists(private()), 10, message="the ack")
        assert not returned.is_set()  # sent before the paused wait ended, not after it
    finally:
        fetcher.quiet()  # wakes the wait
        idle.join(10)


def fetch_retrying(fetcher):
    """Fetch as a processor does, trying a failed round trip again (the fetcher's own
    socket may still be the one the old server closed)."""
    for _ in range(3):
        try:
            return fetcher.retrieve_work()
        except RedisUnavailableError:
            pass
    raise AssertionError("no fetch succeeded")


def test_an_ack_that_fails_is_kept_reported_once_and_rides_a_later_fetch():
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url)
    cfg = Config(redis_url=server.url)
    reported = []
    cfg.error_handlers.append(lambda exc, ctx, _: reported.append(ctx["context"]))
    fetcher = ReliableFetch(cfg, cfg.capsules_[0], connection_for(cfg))
    try:
        client.lpush("queue:default", job(1))
        unit = fetcher.retrieve_work()
        unit.acknowledge()  # held for the next round trip
        server.stop()  # refused outright: no command of ours can reach it late
        for _ in range(2):
            with pytest.raises(RedisUnavailableError):
                fetcher.flush_acks()
        assert reported == ["Error acknowledging jobs (kept for the next round trip)"]
        assert fetcher.ack_outage.in_outage
        server.start()
        # The server came back with its data (as a persisted Redis would).
        client.lpush(private(), job(1))
        client.lpush("queue:default", job(2))
        assert fetch_retrying(fetcher).job == job(2)  # the kept ack rode this round trip
        assert client.lrange(private(), 0, -1) == [job(2)]
        assert not fetcher.ack_outage.in_outage
    finally:
        fetcher.close()
        client.close()
        close_connections()
        server.cleanup()
