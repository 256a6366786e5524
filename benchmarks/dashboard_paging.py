"""Dashboard paging through Django: page time must not grow with the size of the set.

Fills the `retry` sorted set with N jobs, then times the dashboard's
`api/sets/retries` endpoint (the Django view, through the test client, as a logged-in
superuser) and the core `RetrySet.page()` it calls, at page 1 and at the last page.
A script, not a test: nothing here asserts a time. The fill and timing helpers are the
bench's (`benchmarks/workloads/bench_paging.py`); `make bench` times the
core half on every run.

    python benchmarks/dashboard_paging.py                 # 10^3, 10^5 and 10^6 jobs
    python benchmarks/dashboard_paging.py --sizes 1000 100000 --repeat 50

It starts a private redis-server on a free port (as the test suite does) and uses a
throw-away SQLite database, so it touches nothing of yours.
"""

import argparse
import os
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "workloads"))

from bench_paging import PAGE_SIZE, fill, last_page, median_ms  # noqa: E402

from benchmarks.server import PrivateRedis  # noqa: E402


def setup_django(redis_url: str, db_path: str):
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["WURK_TEST_DB"] = db_path
    os.environ["WURK_REDIS_URL"] = os.environ["REDIS_URL"] = redis_url
    import django
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment
    setup_test_environment()  # allows the test client's "testserver" host
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_superuser("bench", "bench@example.com", None)
    client = Client()
    client.force_login(user)
    return client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    import redis

    server = PrivateRedis().start()
    workdir = tempfile.mkdtemp(prefix="wurk-bench-")
    try:
        client = setup_django(server.url, os.path.join(workdir, "db.sqlite3"))
        from wurk_django.core.api import RetrySet
        redis_client = redis.Redis.from_url(server.url)
        print(f"{'jobs':>10} {'fill s':>8} {'last page':>10} {'API p1 ms':>10} "
              f"{'API last ms':>12} {'core p1 ms':>11} {'core last ms':>13}")
        for size in args.sizes:
            redis_client.flushall()
            fill_s = fill(redis_client, "retry", size)
            last = last_page(size)
            retries = RetrySet()

            def api(page):
                response = client.get("/admin/wurk/api/sets/retries",
                                      {"page": page, "count": PAGE_SIZE})
                assert response.status_code == 200 and len(response.json()["items"]) > 0
            timings = [median_ms(partial(api, 1), args.repeat),
                       median_ms(partial(api, last), args.repeat),
                       median_ms(partial(retries.page, 1, PAGE_SIZE), args.repeat),
                       median_ms(partial(retries.page, last, PAGE_SIZE), args.repeat)]
            print(f"{size:>10,} {fill_s:>8.1f} {last:>10,} {timings[0]:>10.2f} "
                  f"{timings[1]:>12.2f} {timings[2]:>11.2f} {timings[3]:>13.2f}", flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
