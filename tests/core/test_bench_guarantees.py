"""The `guarantees` bench section's smoke run: tiny N, structure only, never a speed."""

import io
import json

import pytest

from benchmarks import cli
from tests.core.test_bench_smoke import TINY, cli_args

pytestmark = pytest.mark.slow


def test_the_guarantees_section_reports_its_rows(redis_url, tmp_path):
    out = io.StringIO()
    status = cli.execute(cli_args(*TINY, "--redis-url", redis_url, "--sections", "guarantees",
                                  "--json", str(tmp_path / "bench.json")), out=out)
    assert status == 0, out.getvalue()
    rows = {row["metric"]: row["targets"]["wurk"]
            for row in json.loads((tmp_path / "bench.json").read_text())["rows"]}
    for push in ("single push (2 args)", "push with unique_for",
                 "duplicate push with unique_for (dropped)",
                 "encrypted push (encrypt=True, 2 args)"):
        assert rows[f"{push}, per push"]["median"] > 0
        assert rows[f"{push}, Redis round trips per push"]["median"] == 1.0
    for metric in ("decode + job hooks of an encrypted job (decrypt, restore)",
                   "reliable push: buffered pushes replayed after an outage",
                   "encrypted noop jobs/s, 10 threads x 1 process"):
        assert rows[metric]["median"] > 0
