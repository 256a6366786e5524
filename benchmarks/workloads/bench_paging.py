"""Dashboard paging: the data API's page time on sets of 10^3 to 10^6 jobs.

Fills the `retry` sorted set with N jobs (pipelined ZADD in chunks) and times
`RetrySet.page()` (what the dashboard's `api/sets/retries` calls) at page 1 and at
the last page: ZRANGE by rank is O(log N + page size), so the time must stay flat.
"""

import statistics
import time
from functools import partial

FILL_CHUNK = 10_000
PAGE_SIZE = 25
WARM_UP_CALLS = 5


def payload(index: int) -> bytes:
    return (b'{"class":"app.tasks.Charge","args":[%d,"order-%d"],"queue":"default",'
            b'"jid":"%024x","created_at":1739522580123,"retry_count":3,'
            b'"error_class":"ValueError","error_message":"card declined"}'
            % (index, index, index))


def fill(redis_client, key: str, count: int) -> float:
    """ZADD `count` retry entries, 10,000 per round trip; return the seconds it took."""
    started = time.perf_counter()
    for start in range(0, count, FILL_CHUNK):
        pipe = redis_client.pipeline(transaction=False)
        pipe.zadd(key, {payload(i): 1_700_000_000.0 + i
                        for i in range(start, min(start + FILL_CHUNK, count))})
        pipe.execute()
    return time.perf_counter() - started


def median_ms(run, repeat: int) -> float:
    for _ in range(WARM_UP_CALLS):  # connections, caches
        run()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def last_page(size: int) -> int:
    return max(1, -(-size // PAGE_SIZE))


def measure(redis_client, sizes, repeat: int) -> list[dict]:
    """Page 1 and the last page of `RetrySet` for each size (the database is flushed)."""
    from wurk_django.core.api import RetrySet
    rows = []
    for size in sizes:
        redis_client.flushall()
        fill_s = fill(redis_client, "retry", size)
        retries, last = RetrySet(), last_page(size)
        rows.append({"jobs": size, "fill_s": fill_s, "last_page": last,
                     "first_ms": median_ms(partial(retries.page, 1, PAGE_SIZE), repeat),
                     "last_ms": median_ms(partial(retries.page, last, PAGE_SIZE), repeat)})
    redis_client.flushall()
    return rows
