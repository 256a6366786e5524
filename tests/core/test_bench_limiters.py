"""The bench's `limiters` section, tiny: every row is there, and the round trips each
limiter call costs are the documented ones (timing is the bench's, never a test's)."""

import io
import json

import pytest

from benchmarks import cli

pytestmark = pytest.mark.slow


def test_a_tiny_limiters_run_reports_each_limiters_cost(redis_url, tmp_path):
    out = io.StringIO()
    parser = cli.argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args([
        "--redis-url", redis_url, "--sections", "limiters", "--repeat", "1",
        "--scale", "0.002", "--no-progress", "--json", str(tmp_path / "bench.json")])
    assert cli.execute(args, out=out) == 0, out.getvalue()
    rows = {row["metric"]: row["targets"]["wurk"]["median"]
            for row in json.loads((tmp_path / "bench.json").read_text())["rows"]}
    for kind, trips in (("concurrent", 2), ("bucket", 1), ("window", 1), ("leaky", 1),
                        ("points", 1)):
        where = f"{kind} limiter, within_limit never hit"
        assert rows[f"{where}, Redis round trips per call"] == trips
        assert rows[f"{where}, per call"] > 0
    assert rows["noop jobs/s inside a concurrent limiter never hit, 10 threads x 1 process"] > 0
    # Per job, the fetch's batching moves with so few jobs: the full run measures it.
    assert "Redis round trips the limiter adds per job, 10 threads x 1 process" in rows
    # The ideal is a lower bound (two jobs at once, never more); a third at once would read
    # about 0.67. The 1 % is the counter poll's granularity at this tiny scale.
    assert rows["task concurrency=2, 20 x 50 ms jobs on 2 processes x 10 threads: drain "
                "time / ideal"] >= 0.99
