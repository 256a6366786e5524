"""`python -m wurk_django.core` with bad flags or a bad REDIS_URL: one clean line naming
the flag or variable, exit status 1, never a traceback."""

import subprocess
import sys

import pytest

from tests.support.workers import ROOT


def run_cli(*args, redis_url="redis://127.0.0.1:1/0"):
    env = {"PATH": "/usr/bin:/bin", "REDIS_URL": redis_url}
    return subprocess.run([sys.executable, "-m", "wurk_django.core", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, redis_url, text", [
    (["--redis-url", "http://cache:6379/0"], None,
     "wurk: --redis-url must be a redis://, rediss:// or unix:// URL, got 'http://cache:6379/0'"),
    ([], "not a url", "wurk: $REDIS_URL must be a redis://, rediss:// or unix:// URL"),
    (["--max-memory-mb", "0", "--redis-url", "http://x"], None,
     "wurk: --max-memory-mb must be > 0 (a number of megabytes), got 0.0"),
    (["-p", "0", "--redis-url", "http://x"], None,
     "wurk: --processes must be a whole number >= 1, got 0"),
    (["-c", "0"], None, "wurk: --concurrency must be a whole number >= 1, got 0"),
    (["-q", "critical,x"], None, "wurk: --queue: queue entry 'critical,x': the weight"),
    (["--leader-renew", "40"], None, "wurk: --leader-renew (40.0) must be shorter than"),
])
def test_a_bad_flag_or_url_is_one_clean_line(args, redis_url, text):
    done = run_cli(*args, **({"redis_url": redis_url} if redis_url else {}))
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(text), done.stderr
