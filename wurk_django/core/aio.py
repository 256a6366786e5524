"""`async def` tasks: one event-loop thread per process runs every coroutine job.

The processor thread that fetched the job waits for it, so async jobs count against
the same concurrency as sync ones, and sync jobs never run on (or stall) the loop.
"""

import asyncio
import concurrent.futures
import inspect
import os
import threading

_lock = threading.Lock()
_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
WAIT_SLICE_S = 0.5


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop[0] != os.getpid():  # a forked child needs its own
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="wurk-asyncio", daemon=True).start()
            _loop = (os.getpid(), loop)
        return _loop[1]


def resolve(result):
    """If a task returned a coroutine, run it on the loop and wait; else pass it through."""
    if not inspect.iscoroutine(result):
        return result
    future = asyncio.run_coroutine_threadsafe(result, _event_loop())
    try:
        # Wait in slices: a hard shutdown raises Shutdown in this thread between them.
        while True:
            try:
                return future.result(WAIT_SLICE_S)
            except concurrent.futures.TimeoutError:
                continue
    except BaseException:
        future.cancel()
        raise
