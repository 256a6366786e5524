"""TimerLoop, the primitive under every periodic thread: first tick after one interval,
terminate wakes it at once, bounded stop, and no second copy next to a wedged thread."""

import sys
import threading

from tests.support.workers import wait_until
from wurk_django.core.timer_loop import TimerLoop


def threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def waiting(name: str) -> bool:
    """True while the loop's thread is blocked in its Event.wait (between ticks)."""
    [thread] = threads_named(name) or [None]
    frame = thread and sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__:
            return True
        frame = frame.f_back
    return False


def test_the_first_tick_comes_one_interval_after_start():
    ticks = []
    loop = TimerLoop("t-first", 3600, lambda: ticks.append(1))
    loop.start()
    try:
        # Parked in its first wait without having ticked: a process that stops within
        # the first interval never ticks at all.
        wait_until(lambda: waiting("t-first"), 5, message="the loop's first wait")
        assert ticks == []
    finally:
        assert loop.stop() is True
    assert ticks == []


def test_the_loop_waits_an_interval_between_ticks():
    ticks = []
    loop = TimerLoop("t-between", 3600, lambda: ticks.append(1), first_wait_s=0)
    loop.start()
    try:
        wait_until(lambda: ticks and waiting("t-between"), 5, message="a tick, then a wait")
        assert ticks == [1]  # parked for the next interval, not ticking again
    finally:
        assert loop.stop() is True


def test_first_wait_and_interval_may_be_callables_read_each_time():
    reads, ticks = [], []

    def interval():
        reads.append(1)
        return 0.02

    loop = TimerLoop("t-callable", interval, lambda: ticks.append(1), first_wait_s=lambda: 0.0)
    loop.start()
    try:
        wait_until(lambda: len(ticks) >= 3, 5, message="three ticks")
    finally:
        loop.stop()
    assert len(reads) >= 2  # read again before every wait, not once at start


def test_terminate_cuts_a_long_wait_short():
    loop = TimerLoop("t-long", 3600, lambda: None)
    loop.start()
    wait_until(lambda: waiting("t-long"), 5, message="the loop's hour-long wait")
    # stop() joins for at most JOIN_TIMEOUT_S and says False when the thread outlives
    # that: True means terminate() woke the wait.
    assert loop.stop() is True
    assert not threads_named("t-long") and not loop.running


def test_a_raising_tick_is_reported_and_the_loop_goes_on():
    errors, ticks = [], []

    def tick():
        ticks.append(1)
        raise RuntimeError("tick failed")

    loop = TimerLoop("t-raise", 0.02, tick, on_error=errors.append)
    loop.start()
    try:
        wait_until(lambda: len(ticks) >= 3, 5, message="ticks after a failure")
    finally:
        loop.stop()
    assert all(isinstance(e, RuntimeError) for e in errors) and len(errors) >= 3


def test_a_running_tick_finishes_and_no_other_starts_after_terminate():
    entered, release = threading.Event(), threading.Event()
    finished = []

    def tick():
        entered.set()
        release.wait(5)
        finished.append(1)

    loop = TimerLoop("t-finish", 0.01, tick)
    loop.start()
    assert entered.wait(5)
    loop.terminate()
    release.set()
    assert loop.stop() is True
    assert finished == [1]


def test_a_stopped_loop_can_be_started_again():
    ticks = []
    loop = TimerLoop("t-restart", 0.02, lambda: ticks.append(1))
    loop.start()
    wait_until(lambda: ticks, 5, message="a first tick")
    assert loop.stop() is True
    count = len(ticks)
    assert loop.start() is True  # start() resets the terminated flag
    try:
        wait_until(lambda: len(ticks) > count, 5, message="ticks after the restart")
    finally:
        loop.stop()
    loop.reset()  # reset alone never starts a thread
    assert not loop.running


def test_a_stopped_loop_whose_thread_would_not_join_is_not_doubled_by_a_restart():
    entered, release = threading.Event(), threading.Event()
    ticks = []

    def tick():
        ticks.append(1)
        entered.set()
        release.wait(10)

    loop = TimerLoop("t-wedged", 0.01, tick)
    loop.start()
    assert entered.wait(5)
    assert loop.stop(timeout_s=0.05) is False  # the tick is wedged: the reference is kept
    assert loop.running
    assert loop.start() is False  # not reset, not respawned next to the live thread
    assert len(threads_named("t-wedged")) == 1
    release.set()
    wait_until(lambda: not loop.running, 5, message="the wedged thread to end")
    assert ticks == [1]  # it ended after its tick instead of being revived by a reset
    release.clear()
    entered.clear()
    assert loop.start() is True
    try:
        assert entered.wait(5)
        assert len(threads_named("t-wedged")) == 1
    finally:
        release.set()
        assert loop.stop() is True


def test_stop_before_start_is_harmless():
    loop = TimerLoop("t-never", 1, lambda: None)
    assert loop.stop() is True
    assert not loop.running
