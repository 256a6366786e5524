"""Two hosts against one Redis: real workers in network and UTS namespaces of their own
(tests/support/netns.py). One host is SIGKILLed whole, supervisor and all; its in-flight
jobs, its cron leadership and its place in the process list pass to the other host as
their TTLs say, and no job is lost."""

import sys
import time
from collections import Counter, defaultdict

import pytest
import redis

from tests.support import netns
from tests.support.redis_server import RedisServer
from tests.support.workers import wait_until
from wurk_django.core import Client, Config, keys
from wurk_django.core.api import ProcessSet, Workers
from wurk_django.core.heartbeat import PROCESS_TTL_S
from wurk_django.core.payload import loads
from wurk_django.core.redis import close_connections

pytestmark = pytest.mark.slow

# As in tests/core/multi_host_jobs.py, which this process must not import: its cron loop
# would be registered in every later test's process.
JOB, RAN, CRON_QUEUE = "tests.core.multi_host_jobs.HostTally", "test:ran", "multi-host-cron"
JOBS, WORK_MS = 200, 300
PROCESSES, THREADS = 2, 3
LEADER_TTL_S, LEADER_RETRY_S = 3, 1
FLAGS = ("-p", str(PROCESSES), "-c", str(THREADS), "-q", "default", "-t", "1",
         "--heartbeat-interval", "1", "--reaper-interval", "1", "--poll-interval", "1",
         "--cron-tick", "1", "--leader-ttl", str(LEADER_TTL_S), "--leader-renew", "1",
         "--leader-retry", str(LEADER_RETRY_S))


@pytest.fixture
def network():
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(f"cannot make test hosts: {reason}")
    with netns.HostNetwork() as network:
        yield network


@pytest.fixture
def shared_redis(network):
    """A redis-server for every host, on the bridge's address (and loopback for the test)."""
    server = RedisServer(extra_args=("--bind", "127.0.0.1", network.gateway,
                                     "--protected-mode", "no")).start()
    yield server
    server.cleanup()
    close_connections()


def host_of(identity) -> str:
    return (identity.decode() if isinstance(identity, bytes) else identity).split(":")[0]


def listed(config) -> Counter:
    """hostname -> processes the data API (the dashboard's Processes page) lists."""
    return Counter(process.hostname for process in ProcessSet(config))


def held(client, host: str) -> list[bytes]:
    """The jobs in `host`'s private lists: fetched, not yet acknowledged."""
    return [job for key in client.scan_iter(match=f"queue:default|{host}|*")
            for job in client.lrange(key, 0, -1)]


def runs(client) -> dict[str, list[str]]:
    """jid -> the hosts that ran it, in order."""
    found = defaultdict(list)
    for entry in client.lrange(RAN, 0, -1):
        jid, host, _pid = entry.decode().split()
        found[jid].append(host)
    return found


def test_a_host_killed_whole_hands_its_jobs_leadership_and_place_to_the_other(
        network, shared_redis, start_worker, capsys):
    client = redis.Redis.from_url(shared_redis.url)
    config = Config(redis_url=shared_redis.url)
    h1, h2 = network.add_host("h1"), network.add_host("h2")
    workers = {}

    def start(host):
        workers[host.name] = start_worker(
            *FLAGS, require="tests.core.multi_host_jobs", env={"DYNO": ""},
            redis=f"redis://{network.gateway}:{shared_redis.port}/0",
            command=host.command(sys.executable, "-m", "wurk_django.core"))

    start(h1)
    wait_until(lambda: host_of(client.get(keys.LEADER) or b"") == "h1", 30, 0.05, "h1 to lead")
    start(h2)
    wait_until(lambda: listed(config) == {"h1": PROCESSES, "h2": PROCESSES}, 30, 0.05,
               f"{PROCESSES} processes listed per host")
    # Each host reaches Redis from its own address, over its own link.
    peers = {client_info["addr"].rsplit(":", 1)[0] for client_info in client.client_list()}
    assert {h1.address, h2.address} <= peers

    jids = Client(config).push_bulk({"class": JOB, "queue": "default",
                                     "args": [[WORK_MS]] * JOBS})
    wait_until(lambda: sum(hosts.count("h1") for hosts in runs(client).values()) >= 20
               and held(client, "h1"), 30, 0.02, "h1 to run jobs and hold more")

    at_death = {}

    def look():  # every h1 process stopped, none killed yet: its state when it died
        at_death.update(held=[loads(job)["jid"] for job in held(client, "h1")],
                        leader=client.get(keys.LEADER), leader_ttl_ms=client.pttl(keys.LEADER),
                        busy={host_of(identity) for identity, _, _ in Workers(config)},
                        fired=client.llen(f"queue:{CRON_QUEUE}"))

    killed = h1.kill_all(while_frozen=look)
    killed_at = time.monotonic()
    assert len(killed) >= 1 + PROCESSES  # the supervisor and its children
    assert at_death["held"], "h1 held no job when it died: nothing to reclaim"
    assert host_of(at_death["leader"]) == "h1" and at_death["leader_ttl_ms"] <= LEADER_TTL_S * 1000
    assert at_death["busy"] == {"h1", "h2"}

    seen = {}

    def handed_over():
        # Lists before the process list: lists gone while h1 is still listed would mean
        # the reaper took jobs from a process it should have taken for alive.
        reclaimed = not held(client, "h1")
        still_listed = listed(config)["h1"] > 0
        busy = {host_of(identity) for identity, _, _ in Workers(config)}
        now = time.monotonic() - killed_at
        if host_of(client.get(keys.LEADER) or b"") == "h2":
            seen.setdefault("leader", now)
        if not still_listed and "h1" not in busy:
            seen.setdefault("dropped", now)
        if reclaimed:
            seen.setdefault("reclaimed", now)
            assert not still_listed, "h1's jobs were reclaimed while h1 was still listed live"
        return len(seen) == 3

    wait_until(handed_over, PROCESS_TTL_S + 30, 0.1,
               "h2 to lead, h1 to leave the process list and its jobs to be reclaimed")
    wait_until(lambda: set(jids) <= set(runs(client)) and not held(client, "h2")
               and not client.llen("queue:default"), 60, 0.1, "every job to run")

    ran = runs(client)
    # Leadership does not wait for the heartbeat TTL: it moves once its own lock lapses.
    assert seen["leader"] < seen["dropped"] <= seen["reclaimed"]
    # The new leader's cron keeps firing, and no second runs along with the old one.
    wait_until(lambda: client.llen(f"queue:{CRON_QUEUE}") > at_death["fired"], 10, 0.1,
               "h2 to fire the cron loop")
    fired = [loads(job)["jid"] for job in client.lrange(f"queue:{CRON_QUEUE}", 0, -1)]
    assert len(set(fired)) == len(fired)
    # Every job h1 held when it died ran on h2 after that: none lost.
    assert [jid for jid in at_death["held"] if "h2" not in ran[jid]] == []
    # Only a job h1 ran without acknowledging may run twice; h2 never runs one twice.
    duplicated = {jid: hosts for jid, hosts in ran.items() if len(hosts) > 1}
    assert all(hosts.count("h2") == 1 and "h1" in hosts for hosts in duplicated.values())
    assert not client.zcard("retry") and not client.zcard("dead")

    with capsys.disabled():
        print(f"\nmulti-host: {JOBS} pushed, {len(ran)} distinct run, "
              f"{sum(map(len, ran.values()))} runs ({len(duplicated)} duplicated); "
              f"{len(at_death['held'])} held by h1 at its death, reclaimed after "
              f"{seen['reclaimed']:.1f} s (process TTL {PROCESS_TTL_S} s); leadership "
              f"moved after {seen['leader']:.1f} s (leader TTL {LEADER_TTL_S} s + retry "
              f"{LEADER_RETRY_S} s); dropped from the process list after "
              f"{seen['dropped']:.1f} s")
