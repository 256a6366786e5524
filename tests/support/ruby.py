"""Ruby's Sidekiq beside the suite: whether it is installed, and running the scripts of
tests/compat/ruby/ against the suite's redis-server, reading the JSON they print."""

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUBY_DIR = ROOT / "tests" / "compat" / "ruby"
SUPPORTED_MAJOR = "6"  # the goldens and the timestamp checks pin Sidekiq 6's readers
INSTALL_HINT = ("install it with `apt-get install ruby-sidekiq` (Debian 12: Ruby with "
                "Sidekiq 6.4; `make test` does this as root), or `gem install sidekiq -v '~> 6.4'`")
RUN_TIMEOUT_S = 120


@cache
def sidekiq_version() -> str | None:
    """The installed Sidekiq's version, or None without ruby or Sidekiq."""
    ruby = shutil.which("ruby")
    if ruby is None:
        return None
    result = subprocess.run([ruby, "-e", 'require "sidekiq"; print Sidekiq::VERSION'],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    return result.stdout.strip() if result.returncode == 0 else None


def missing_sidekiq() -> str | None:
    """Why the Ruby interop tests cannot run here, or None when they can."""
    if shutil.which("ruby") is None:
        return f"ruby is not installed; {INSTALL_HINT}"
    version = sidekiq_version()
    if version is None:
        return f"Ruby cannot `require \"sidekiq\"`; {INSTALL_HINT}"
    if version.split(".")[0] != SUPPORTED_MAJOR:
        return (f"these tests pin Sidekiq {SUPPORTED_MAJOR}.x's readers, found Sidekiq "
                f"{version}; {INSTALL_HINT}")
    return None


def require_sidekiq() -> None:
    """Skip the calling test, saying how to install what it needs, unless Sidekiq runs."""
    reason = missing_sidekiq()
    if reason is not None:
        pytest.skip(reason)


def run_ruby(script: str, redis_url: str, *args: str, stdin: str | None = None) -> dict:
    """Run tests/compat/ruby/<script> with REDIS_URL set; return the JSON it prints."""
    env = dict(os.environ, REDIS_URL=redis_url)
    result = subprocess.run(["ruby", str(RUBY_DIR / script), *args], input=stdin, env=env,
                            capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT)
    if result.returncode != 0:
        raise AssertionError(f"ruby {script} exited {result.returncode}:\n{result.stderr}")
    return json.loads(result.stdout)
