"""The batches bench's own smoke run (tiny N, its own private Redis), so it cannot rot.
Only the rows' presence is checked, never a speed."""

import json
import subprocess
import sys

import pytest

from tests.support.workers import ROOT

pytestmark = pytest.mark.slow


def test_a_tiny_batches_bench_run_reports_every_row(tmp_path):
    out = tmp_path / "batches.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.batches", "--repeat", "1", "--bulk-jobs", "200",
         "--accounting-jobs", "20", "--drain-jobs", "50", "--latency-batches", "5",
         "--paging-sizes", "100", "--batch-jobs", "200", "--json", str(out),
         "--log-dir", str(tmp_path)],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["row"] for row in json.loads(out.read_text())}
    for row in ("perform_bulk inside a batch / plain",
                "batch accounting, Redis round trips per job", "batch drain / plain drain",
                "last job's return -> success callback start p99, idle worker",
                "batches list page, 100 batches, last page",
                "batch page, a batch of 200 jobs (20 failing)"):
        assert row in rows, sorted(rows)
