"""The README's unique-jobs and expiring-jobs examples run as written, against Redis."""

import re

from tests.support.workers import ROOT
from wurk_django.core import keys
from wurk_django.core.registry import REGISTRY


def readme_block(heading: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split(heading, 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]


def run(block: str) -> dict:
    namespace = {"__name__": "readme_example"}
    before = set(REGISTRY.names())
    try:
        exec(compile(block, "README.md", "exec"), namespace)  # the README's own code
    finally:
        for name in set(REGISTRY.names()) - before:
            REGISTRY.unregister(name)
    return namespace


def test_the_unique_jobs_example_runs(config, redis_client):
    run("from datetime import timedelta\n" + readme_block("### Unique jobs:"))
    # 7 once, 7 again without the lock, 8 later; the second push of 7 was dropped.
    assert redis_client.llen(keys.queue("default")) == 2
    assert redis_client.zcard(keys.SCHEDULE) == 1
    assert len(list(redis_client.scan_iter(match="unique:*"))) == 2


def test_the_expiring_jobs_example_runs(config, redis_client):
    run("from datetime import timedelta\nfrom wurk_django import wurk_task\n"
        + readme_block("### Expiring jobs:"))
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    assert b'"expires_in":300' in raw and b'"expiry":' in raw
