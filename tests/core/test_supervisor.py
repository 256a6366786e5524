"""The `--processes N` supervisor with real children and real signals."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime

import pytest

from tests.core import jobs
from tests.support.workers import alive, children, wait_until
from wurk_django.core import keys
from wurk_django.core.payload import loads

pytestmark = pytest.mark.slow

FAST = ("--heartbeat-interval", "0.5", "--reaper-interval", "1", "--poll-interval", "0.5")


# --- helpers shared with test_no_job_lost.py --------------------------------------------

def heartbeats(redis_client) -> dict[int, dict]:
    """pid -> identity hash (decoded) of every process registered with an `info` field."""
    beats = {}
    for member in redis_client.smembers(keys.PROCESSES):
        fields = redis_client.hgetall(member)
        if b"info" in fields:
            pid = int(member.decode().split(":")[1])
            beats[pid] = {k.decode(): v.decode() for k, v in fields.items()}
    return beats


def registered_children(redis_client, parent: int) -> set[int]:
    return set(heartbeats(redis_client)) & children(parent)


def wait_for_children(redis_client, parent: int, count: int, timeout_s: float = 20) -> set[int]:
    """Wait until `count` children of `parent` run and have all sent a heartbeat."""
    def ready():
        live = children(parent)
        return live if len(live) == count and live <= set(heartbeats(redis_client)) else None
    return wait_until(ready, timeout_s, 0.05, f"{count} registered worker processes")


@pytest.fixture
def swarm(start_worker):
    """Start a supervisor; at teardown stop it and SIGKILL any child it leaves behind."""
    started = []

    def start(*args, **options):
        worker = start_worker(*args, **options)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.send(signal.SIGSTOP)  # no fork between listing the children and the kill
            for pid in children(worker.pid):
                _kill(pid, signal.SIGKILL)
        worker.stop()


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def private_lists(redis_client, pid: int, queue: str = "default") -> list[bytes]:
    """Every job in the private lists of worker process `pid`."""
    found = []
    for key in redis_client.scan_iter(match=f"queue:{queue}|*|{pid}|*"):
        found += redis_client.lrange(key, 0, -1)
    return found


# --- crash, stop, quiet ------------------------------------------------------------------

def test_a_crashed_child_is_restarted_in_its_slot_and_serves(config, swarm, redis_client):
    worker = swarm("-p", "2", "-c", "2", *FAST)
    first = wait_for_children(redis_client, worker.pid, 2)
    victim = min(first)
    _kill(victim, signal.SIGKILL)
    now = wait_for_children(redis_client, worker.pid, 2)
    assert victim not in now
    [newcomer] = now - first
    worker.wait_for_log(f"Worker process {victim} (slot ")
    worker.wait_for_log(f"Started worker process {newcomer} in slot ")
    log = worker.log()
    slot = re.search(rf"Worker process {victim} \(slot (\d+)\) exited with signal SIGKILL",
                     log)
    assert slot, log
    assert f"Started worker process {newcomer} in slot {slot[1]}" in log

    def newcomer_ran_one():
        jobs.record_pid.perform_bulk([["probe"]] * 10)
        pids = {json.loads(item)[1] for item in redis_client.lrange("test:pids", 0, -1)}
        return newcomer in pids
    wait_until(newcomer_ran_one, 15, 0.2, "a job run by the restarted child")


def restarts(log: str, slot: str) -> list[str]:
    """How the supervisor scheduled each restart of `slot`: "now" or a delay in seconds."""
    return [m[2] or m[1] for m in re.finditer(rf"Restarting slot {slot} (now|in (\d+) s)", log)]


def test_a_child_dying_at_boot_is_backed_off_and_one_killed_serving_is_not(
        config, swarm, redis_client):
    # Boots 1-3 exit before registering (both first children and one retry), and so does
    # boot 6, the replacement of the child this test kills.
    worker = swarm("-p", "2", "-c", "2", "--require", "tests.core.crash_at_boot", *FAST,
                   env={"WURK_TEST_BOOT_CRASHES": "1,2,3,6"})
    wait_for_children(redis_client, worker.pid, 2)
    assert int(redis_client.get("test:boots")) == 5
    worker.wait_for_log("Restarting slot 0 in ")
    worker.wait_for_log("Restarting slot 1 in ")
    by_slot = {slot: restarts(worker.log(), slot) for slot in "01"}
    assert sorted(by_slot.values()) == [["1"], ["1", "2"]]  # doubling while it cannot boot
    [looped] = [slot for slot, delays in by_slot.items() if delays == ["1", "2"]]
    victim = int(re.findall(rf"Started worker process (\d+) in slot {looped}", worker.log())[-1])
    assert victim in registered_children(redis_client, worker.pid)
    _kill(victim, signal.SIGKILL)

    def replaced():
        kids = registered_children(redis_client, worker.pid)
        return len(kids) == 2 and victim not in kids
    wait_until(replaced, 20, 0.05, "the killed child replaced")
    assert int(redis_client.get("test:boots")) == 7
    wait_until(lambda: len(restarts(worker.log(), looped)) == 4, 5, 0.05, "the log lines")
    # It was serving: replaced at once; its replacement died booting and was backed off
    # from 1 s again, since serving had proved the slot could boot.
    assert restarts(worker.log(), looped) == ["1", "2", "now", "1"]


def test_term_stops_every_child_and_sigkills_a_straggler(config, swarm, redis_client):
    timeout_s, grace_s = 1, 5
    worker = swarm("-p", "2", "-c", "2", "-t", str(timeout_s), *FAST)
    kids = wait_for_children(redis_client, worker.pid, 2)
    jid = jobs.ignore_term_and_sleep.perform_async(120, "deaf")
    started = wait_until(lambda: redis_client.lrange("test:started", 0, -1), 10,
                         message="the TERM-deaf job to start")
    deaf = json.loads(started[0])[1]
    [graceful] = kids - {deaf}
    worker.send(signal.SIGTERM)
    assert worker.wait(timeout_s + grace_s + 30) == 0  # a parent that never kills fails here
    assert not any(alive(pid) for pid in kids)
    log = worker.log()
    # The parent waited out timeout + grace for the deaf child before killing it, by its
    # own log's clock (a loaded machine can only make the gap longer), and left only
    # after every child was gone.
    term = _line_with(log, "Supervisor received TERM")
    kill = _line_with(log, f"Worker process {deaf} still running; SIGKILL")
    assert (_logged_at(kill) - _logged_at(term)).total_seconds() >= timeout_s + grace_s - 0.01
    lines = log.splitlines()
    assert lines.index(kill) < lines.index(_line_with(log, "every worker process has stopped"))
    assert f"Worker process {graceful} still running" not in log
    assert any(f"pid={graceful} " in line and "Bye!" in line for line in log.splitlines())
    # Not lost: the SIGKILLed child's job waits in its private list for the reaper.
    held = [loads(raw)["jid"] for raw in private_lists(redis_client, deaf)]
    queued = [loads(raw)["jid"] for raw in redis_client.lrange("queue:default", 0, -1)]
    assert jid in held + queued


def test_tstp_quiets_every_child_and_sticks_for_new_ones(config, swarm, redis_client):
    worker = swarm("-p", "2", "-c", "2", *FAST)
    first = wait_for_children(redis_client, worker.pid, 2)
    worker.send(signal.SIGTSTP)
    wait_until(lambda: all(heartbeats(redis_client)[pid]["quiet"] == "true" for pid in first),
               10, message="every child quiet")
    victim = min(first)
    _kill(victim, signal.SIGKILL)
    now = wait_for_children(redis_client, worker.pid, 2)
    [newcomer] = now - first
    beat = heartbeats(redis_client)[newcomer]
    assert beat["quiet"] == "true"  # booted quiet: its very first heartbeat says so
    jobs.record.perform_async("nobody may run this")
    wait_until(lambda: float(heartbeats(redis_client)[newcomer]["beat"]) > float(beat["beat"]) + 1,
               10, message="two more heartbeats from the new child")
    assert redis_client.llen("queue:default") == 1
    assert redis_client.llen("test:results") == 0


# --- replacement: memory and rolling restart ----------------------------------------------

def test_a_child_over_max_memory_is_replaced_gracefully(config, swarm, redis_client):
    worker = swarm("-p", "2", "-c", "2", "-t", "2", "--max-memory-mb", "200", *FAST)
    first = wait_for_children(redis_client, worker.pid, 2)
    jobs.hold_memory.perform_async(300)
    hog = int(wait_until(lambda: redis_client.lrange("test:hogs", 0, -1), 10,
                         message="the memory hog")[0])
    [lean] = first - {hog}
    # The memory check runs every 10 s, then the rolling restart replaces the hog.
    def replaced():
        kids = registered_children(redis_client, worker.pid)
        return kids if len(kids) == 2 and hog not in kids else None
    now = wait_until(replaced, 30, 0.1, "the hog replaced")
    assert lean in now
    [replacement] = now - first
    worker.wait_for_log(f"Replaced worker process {hog} ")
    log = worker.log()
    assert f"Worker process {hog} uses " in log and "over the 200 MB limit" in log
    assert f"Rolling restart: {replacement} is up; stopping {hog}" in log
    assert f"Replaced worker process {hog} (slot " in log
    assert "exited with exit status 0" in _line_with(log, f"Replaced worker process {hog} ")
    assert f"{hog} ignored TERM" not in log


def _line_with(log: str, text: str) -> str:
    return next(line for line in log.splitlines() if text in line)


def _logged_at(line: str) -> datetime:
    return datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))


def test_usr1_replaces_every_child_one_at_a_time(config, swarm, redis_client):
    n = 2
    worker = swarm("-p", str(n), "-c", "2", "-t", "2", *FAST)
    first = wait_for_children(redis_client, worker.pid, n)
    worker.send(signal.SIGUSR1)
    fewest_serving, most_alive, samples = n, n, 0
    deadline = time.monotonic() + 30
    while True:
        live = children(worker.pid)
        beats = heartbeats(redis_client)
        serving = {pid for pid in live if beats.get(pid, {}).get("quiet") == "false"}
        fewest_serving = min(fewest_serving, len(serving))
        most_alive = max(most_alive, len(live))
        samples += 1
        if not (live & first) and len(serving) == n:
            break
        assert time.monotonic() < deadline, f"rolling restart unfinished: {live} {first}"
        time.sleep(0.05)
    print(f"\nrolling restart: {samples} samples, at least {fewest_serving} of {n} children "
          f"serving, at most {most_alive} alive")
    assert fewest_serving >= n - 1
    assert most_alive <= n + 1  # one replacement at a time
    # In the log: stop one, see it exit cleanly, only then stop the next.
    for pid in first:
        worker.wait_for_log(f"Replaced worker process {pid} ")  # reaped a tick later
    lines = worker.log().splitlines()
    stops = [i for i, line in enumerate(lines) if "Rolling restart: " in line]
    old = [int(lines[i].rsplit(" ", 1)[1]) for i in stops]
    assert len(stops) == n and set(old) == first
    exits = [next(i for i, line in enumerate(lines)
                  if f"Replaced worker process {pid} " in line) for pid in old]
    assert all("exited with exit status 0" in lines[i] for i in exits)
    assert [i for pair in zip(stops, exits) for i in pair] == sorted(stops + exits)
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_children_stop_when_the_supervisor_dies(config, swarm, redis_client):
    worker = swarm("-p", "2", "-c", "2", "-t", "2", *FAST)
    kids = wait_for_children(redis_client, worker.pid, 2)
    worker.send(signal.SIGKILL)
    worker.wait(5)
    wait_until(lambda: not any(alive(pid) for pid in kids), 10, 0.1, "the orphans to stop")
    # They stopped gracefully (parent-death signal is TERM): unregistered themselves.
    assert not set(heartbeats(redis_client)) & kids


ORPHAN_PROBE = """
import os, sys, time
from wurk_django.core.supervisor import OrphanWatch
read_fd, write_fd = os.pipe()
pid = os.fork()
if pid == 0:
    # Only the watch loop, not the kernel's parent-death signal: the fallback on its own.
    OrphanWatch(os.getppid(), interval_s=0.05).loop.start()
    os.write(write_fd, b"1")
    time.sleep(60)
    os._exit(0)
os.read(read_fd, 1)
print(pid, flush=True)
"""


def test_the_orphan_watch_loop_terms_a_child_whose_parent_is_gone():
    # The probe's parent exits at once; stderr stays open until the orphan ends too, so
    # communicate() returns when both are gone (or times out if the orphan lingers).
    probe = subprocess.Popen([sys.executable, "-c", ORPHAN_PROBE], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    out, err = probe.communicate(timeout=30)
    orphan = int(out.split()[0])
    wait_until(lambda: not alive(orphan), 10, message="the orphan to stop")
    assert f"Supervisor {probe.pid} is gone; stopping" in err
