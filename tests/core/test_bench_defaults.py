"""The bench's `defaults` section and its Sidekiq peer, in a tiny run against the suite's
Redis: each system's default command (`manage.py wurk_worker`, `sidekiq -r jobs.rb`),
once, one copy per CPU, and Wurk's -p auto. Only the result's structure is checked."""

import io
import json
import os

import pytest

from benchmarks import cli
from tests.support.redis_server import RedisServer
from tests.support.ruby import require_sidekiq

pytestmark = pytest.mark.slow


@pytest.fixture
def empty_redis():
    """A server of its own: the bench refuses one holding keys, and a process of another
    test still stopping could write to the suite's."""
    server = RedisServer().start()
    yield server.url
    server.cleanup()


def test_a_tiny_defaults_run_has_both_systems_rows(empty_redis, tmp_path):
    require_sidekiq()
    redis_url = empty_redis
    parser = cli.argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--sections", "defaults,throughput", "--sidekiq", "--shapes",
                              "noop", "--threads", "2", "--processes", "1", "--scale", "0.002",
                              "--repeat", "1", "--no-progress", "--redis-url", redis_url,
                              "--json", str(tmp_path / "bench.json")])
    out = io.StringIO()
    assert cli.execute(args, out=out) == 0, out.getvalue()
    result = json.loads((tmp_path / "bench.json").read_text())
    rows = {row["metric"]: row["targets"] for row in result["rows"]}
    both = ["noop jobs/s, default command", "noop jobs/s, 2 threads x 1 process",
            "worker RSS, all processes, noop, default command"]
    cpus = len(os.sched_getaffinity(0))
    if cpus > 1:
        both.append(f"noop jobs/s, default command, one per CPU ({cpus} copies)")
    for metric in both:
        assert set(rows[metric]) == {"wurk", "sidekiq"}, metric
    assert set(rows["noop jobs/s, default command with -p auto"]) == {"wurk"}
    assert "single push from one thread" not in rows  # not run: no push section asked for
    assert result["meta"]["targets"]["sidekiq"]["version"].startswith("6.")
