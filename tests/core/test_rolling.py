"""The rolling-restart state machine on its own: real child processes, no Supervisor.

The test plays the supervisor's part: its fork starts a real process in a slot, it
marks a slot ready when the supervisor would (the child's first heartbeat), and it
reaps an old child the way the supervisor's tick does.
"""

import signal
import subprocess
import sys

import pytest

from wurk_django.core.rolling import RollingRestart
from wurk_django.core.supervisor import Slot

IGNORES_TERM = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('up', flush=True); time.sleep(60)")


class Children:
    """Real processes standing in for worker children, all killed at the end."""

    def __init__(self):
        self.processes: dict[int, subprocess.Popen] = {}
        self.forks: list[int] = []
        self.fail_next_fork = False

    def spawn(self, code: str = "import time; time.sleep(60)") -> int:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        self.processes[process.pid] = process
        return process.pid

    def fork(self, slot: Slot) -> int | None:
        """What Supervisor.fork promises: a new child in `slot`, not ready yet."""
        if self.fail_next_fork:
            self.fail_next_fork = False
            return None
        slot.pid, slot.ready = self.spawn(), False
        self.forks.append(slot.pid)
        return slot.pid

    def exit_status(self, pid: int) -> int:
        return self.processes[pid].wait(15)

    def reap(self, slots: list[Slot]) -> None:
        """The supervisor's reap(): forget old children that have exited."""
        for slot in slots:
            slot.old_pids = [p for p in slot.old_pids if self.processes[p].poll() is None]

    def running(self, pid: int) -> bool:
        return self.processes[pid].poll() is None

    def kill_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()


@pytest.fixture
def children():
    made = Children()
    yield made
    made.kill_all()


def serving_slots(children: Children, count: int) -> list[Slot]:
    return [Slot(index, pid=children.spawn(), ready=True) for index in range(count)]


def test_each_slot_is_replaced_only_once_its_replacement_is_ready(children):
    slots = serving_slots(children, 2)
    old = [slot.pid for slot in slots]
    rolling = RollingRestart(slots, children.fork, exit_limit_s=30)
    rolling.request_all()

    rolling.step()  # slot 0: fork its replacement, keep the old child serving
    [new0] = children.forks
    assert slots[0].pid == new0 and slots[0].old_pids == [old[0]]
    rolling.step()
    rolling.step()  # no heartbeat yet: the old child is left alone
    assert children.running(old[0]) and children.forks == [new0]

    slots[0].ready = True  # the replacement's readiness pipe said it registered
    rolling.step()  # TERM the old child
    assert children.exit_status(old[0]) == -signal.SIGTERM
    rolling.step()  # not reaped yet: still waiting for it
    assert children.forks == [new0]
    children.reap(slots)
    rolling.step()  # reaped: slot 0 is done
    rolling.step()  # slot 1 begins
    assert len(children.forks) == 2 and slots[1].old_pids == [old[1]]
    assert children.running(old[1]) and children.running(new0)


def test_a_replacement_dying_before_its_heartbeat_keeps_the_old_child(children):
    [slot] = serving_slots(children, 1)
    old = slot.pid
    rolling = RollingRestart([slot], children.fork, exit_limit_s=30)
    rolling.request(slot)
    rolling.step()
    new = slot.pid
    children.processes[new].kill()
    children.exit_status(new)
    slot.pid, slot.ready = None, False  # the supervisor's reap of a dead serving child
    rolling.step()
    assert slot.pid == old and slot.ready and slot.old_pids == []
    assert children.running(old)
    assert not rolling.busy_with(slot)


def test_a_failed_fork_keeps_the_old_child(children):
    [slot] = serving_slots(children, 1)
    old = slot.pid
    rolling = RollingRestart([slot], children.fork, exit_limit_s=30)
    children.fail_next_fork = True
    rolling.request(slot)
    rolling.step()
    assert slot.pid == old and slot.ready and slot.old_pids == []
    assert not rolling.busy_with(slot) and children.running(old)


def test_an_old_child_that_ignores_term_is_killed_after_the_exit_limit(children):
    slot = Slot(0, pid=children.spawn(IGNORES_TERM), ready=True)
    old = slot.pid
    assert children.processes[old].stdout.readline() == b"up\n"  # its TERM handler is set
    rolling = RollingRestart([slot], children.fork, exit_limit_s=0)
    rolling.request(slot)
    rolling.step()
    slot.ready = True
    rolling.step()  # TERM: ignored
    rolling.step()  # past the exit limit: SIGKILL
    assert children.exit_status(old) == -signal.SIGKILL
    children.reap([slot])
    rolling.step()
    assert not rolling.busy_with(slot) and slot.pid == children.forks[0]
