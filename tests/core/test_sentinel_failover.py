"""Redis Sentinel fail-over, for real: a master, a replica and three Sentinels
(tests/support/sentinel_cluster.py), a worker given only the Sentinels' addresses, a
stream of pushes from this process, and `SENTINEL FAILOVER` in the middle of it.

Every job books its runs in a ledger on the suite's own server, which takes no part in
the fail-over. A job whose push was acknowledged before the fail-over began must run;
pushes acknowledged by the old master after the replica took over are lost with it (the
window Redis replication leaves open): the test measures that window, how many such
pushes were lost and how many jobs ran twice, and prints the figures."""

import threading
import time
from collections import Counter

import pytest
import redis

from tests.core.failover_jobs import LEDGER
from tests.support.sentinel_cluster import SentinelCluster, require_sentinel
from tests.support.workers import wait_until
from wurk_django.core import Client, Config
from wurk_django.core.errors import RedisFailure
from wurk_django.core.redis import close_connections, connection_for

pytestmark = pytest.mark.slow

JOB = "tests.core.failover_jobs.book"
PUSH_GAP_S = 0.002  # the stream's pace: about 400 pushes a second
BEFORE, AFTER = 200, 200  # jobs run before the fail-over; pushes once the client moved
WORKER = ("-c", "3", "-q", "default", "-t", "10", "--heartbeat-interval", "1",
          "--poll-interval", "1")
# A master that refuses writes while no replica is connected: the old master stops
# acknowledging as soon as its replica is promoted (and the new one until the old one
# has been turned into its replica).
MIN_REPLICAS = ("--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")


class Pusher:
    """Pushes `book(seq)` jobs on a thread, noting when each push was acknowledged."""

    def __init__(self, url: str, new_master_port: int):
        self.config = Config(redis_url=url, tag="failover-test")
        self.client = Client(self.config)
        self.new_master_port = new_master_port
        self.moved_at: float | None = None  # when its connection went to the new master
        self.acked: dict[int, float] = {}
        self.failed: list[tuple[int, float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pusher", daemon=True)

    def start(self) -> "Pusher":
        self._thread.start()
        return self

    def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            seq += 1
            started = time.monotonic()
            try:
                self.client.push({"class": JOB, "args": [seq], "queue": "default"})
                self.acked[seq] = time.monotonic()
                if self.moved_at is None and self.on_master(self.new_master_port):
                    self.moved_at = time.monotonic()
            except RedisFailure as exc:
                self.failed.append((seq, started, str(exc)[:80]))
            self._stop.wait(PUSH_GAP_S)

    def acked_after(self, moment: float) -> int:
        return sum(1 for at in list(self.acked.values()) if at > moment)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def on_master(self, port: int) -> bool:
        """Whether this client's connection has moved to the server on `port`."""
        return connection_for(self.config).pool.master_address == ("127.0.0.1", port)


def booked(ledger: redis.Redis) -> list[tuple[str, int, float]]:
    """(seq, pid, monotonic run time) of every run, in order."""
    rows = []
    for entry in ledger.lrange(LEDGER, 0, -1):
        seq, pid, at = entry.decode().split()
        rows.append((seq, int(pid), float(at)))
    return rows


@pytest.fixture(params=["async replication", "min-replicas-to-write 1"])
def cluster(request):
    require_sentinel()
    cluster = SentinelCluster(MIN_REPLICAS if request.param != "async replication" else ())
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()
        close_connections()


def test_sentinel_failover_mid_stream_loses_no_job_acknowledged_before_it(
        cluster, start_worker, redis_url, redis_client, request):
    worker = start_worker(*WORKER, require="tests.core.failover_jobs", redis=cluster.url,
                          env={"LEDGER_URL": redis_url})
    pusher = Pusher(cluster.url, cluster.replica.port).start()
    try:
        wait_until(lambda: redis_client.llen(LEDGER) >= BEFORE, 30, 0.02,
                   f"{BEFORE} jobs run before the fail-over")
        acked_before = dict(pusher.acked)  # copied before the command is sent
        began = cluster.fail_over()
        switched = cluster.wait_switched()
        wait_until(lambda: pusher.moved_at, 60, 0.01, "the client on the new master")
        worker.wait_for_log("the master moved", timeout_s=30)
        moved = time.monotonic()
        wait_until(lambda: pusher.acked_after(moved) >= AFTER, 60, 0.02,
                   f"{AFTER} pushes acknowledged by the new master")
    finally:
        pusher.stop()
    Client(pusher.config).push({"class": JOB, "args": ["final"], "queue": "default"})
    wait_until(lambda: any(seq == "final" for seq, _, _ in booked(redis_client)), 60, 0.05,
               "the last job, pushed after the stream, to run")
    worker.send(15)  # a graceful stop lets running jobs end and sends their acks
    assert worker.wait(30) == 0, worker.log()

    runs = booked(redis_client)
    counts = Counter(int(seq) for seq, _, _ in runs if seq != "final")
    lost = sorted(seq for seq in pusher.acked if seq not in counts)
    lost_before = [seq for seq in acked_before if seq not in counts]
    assert lost_before == [], (f"{len(lost_before)} jobs acknowledged before the fail-over "
                               f"never ran: {lost_before[:20]}")
    moved_acks = [seq for seq, at in pusher.acked.items() if at > moved]
    assert [seq for seq in moved_acks if seq not in counts] == [], \
        "a push acknowledged once the client had moved to the new master was lost"

    roles = cluster.roles
    first_run_after = min((at for seq, _, at in runs if seq != "final"
                           and pusher.acked.get(int(seq), 0) > switched), default=None)
    figures = {
        "scenario": request.node.callspec.params["cluster"],
        "pushes acknowledged": len(pusher.acked), "pushes refused": len(pusher.failed),
        "replica promoted (s after FAILOVER)": round(roles.promoted - began, 3),
        "Sentinels named it (s)": round(switched - began, 3),
        "client moved (s)": round(pusher.moved_at - began, 3),
        "acknowledged by the old master after the promotion": sum(
            1 for at in pusher.acked.values() if roles.promoted < at < pusher.moved_at),
        "old master demoted (s)": roles.demoted and round(roles.demoted - began, 3),
        "worker ran a job pushed after the switch (s)":
            first_run_after and round(first_run_after - began, 3),
        "acknowledged, then lost": len(lost),
        "lost, acknowledged between (s)": lost and (
            round(pusher.acked[lost[0]] - began, 3), round(pusher.acked[lost[-1]] - began, 3)),
        "ran twice": sum(1 for n in counts.values() if n > 1),
        "refused pushes": Counter(error.split(" refused")[0][:40] for *_, error
                                  in pusher.failed).most_common(2),
    }
    print("\nfail-over figures:", figures)
