"""The benchmark's own smoke run: tiny N against the suite's Redis, so it cannot rot.

Only the result's structure is checked, never a speed.
"""

import ast
import io
import json
import socket
import subprocess
from pathlib import Path

import pytest

from benchmarks import cli, runner
from benchmarks.measure import Sample
from benchmarks.report import Progress, Results
from benchmarks.server import redis_costs

pytestmark = pytest.mark.slow

TINY = ["--repeat", "1", "--scale", "0.002", "--shapes", "noop", "--threads", "2",
        "--processes", "1", "--enqueue-jobs", "50", "--latency-jobs", "5",
        "--paging-sizes", "100", "--no-progress"]


def test_a_tiny_run_reports_every_section(redis_url, tmp_path):
    out = io.StringIO()
    status = cli.execute(cli_args(*TINY, "--redis-url", redis_url,
                                  "--json", str(tmp_path / "bench.json")), out=out)
    assert status == 0, out.getvalue()
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["baseline"] == "wurk" and result["errors"] == []
    assert {"cpus", "load_average_start", "load_average_end", "redis"} <= set(
        result["meta"]["machine"])
    rows = {row["metric"]: row for row in result["rows"]}
    for metric in ("PING loop from one thread (the ceiling)", "single push from one thread",
                   "bulk push from one thread", "single push / PING rate",
                   "noop job body alone (its INCR, no job system), 10 threads",
                   "push->start latency p99, idle worker", "boot to first job, core CLI",
                   "idle RSS per worker process, core CLI",
                   "noop jobs/s, 2 threads x 1 process",
                   "Redis commands per job, noop, 2 threads x 1 process",
                   "Redis round trips per job, noop, 2 threads x 1 process",
                   "dashboard API page, 100 jobs, last page"):
        summary = rows[metric]["targets"]["wurk"]
        assert summary["min"] <= summary["median"] <= summary["max"] and summary["runs"]
    details = rows["noop jobs/s, 2 threads x 1 process"]["details"]["wurk"][0]
    assert details["by_command"] and details["worker_rss_mib"]
    assert "noop jobs/s, 2 threads x 1 process" in out.getvalue()  # the table


def test_vs_runs_a_revision_from_its_own_worktree_and_removes_it(redis_url, tmp_path,
                                                                  monkeypatch):
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    status = cli.execute(cli_args(*TINY, "--redis-url", redis_url, "--sections", "enqueue",
                                  "--vs", "HEAD", "--json", str(tmp_path / "vs.json")),
                         out=io.StringIO())
    assert status == 0
    result = json.loads((tmp_path / "vs.json").read_text())
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                         capture_output=True).stdout.strip()
    assert result["baseline"] == f"wurk@{sha}"
    row = next(r for r in result["rows"] if r["metric"] == "single push from one thread")
    assert set(row["ratios"]) == {"wurk@working-tree"}
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=root, text=True,
                               capture_output=True).stdout
    assert "wurk-bench-vs-" not in worktrees


def test_without_redis_url_it_runs_its_own_redis_and_removes_it(tmp_path, monkeypatch):
    # What `make bench` does: no --redis-url, so the bench starts a redis-server of its own.
    started = []

    class Recorded(cli.PrivateRedis):
        def start(self, *args, **kwargs):
            started.append(self)
            return super().start(*args, **kwargs)

    monkeypatch.setattr(cli, "PrivateRedis", Recorded)
    out = io.StringIO()
    status = cli.execute(cli_args(*TINY, "--sections", "enqueue",
                                  "--json", str(tmp_path / "own.json")), out=out)
    assert status == 0, out.getvalue()
    assert "single push from one thread" in out.getvalue()
    [server] = started
    assert server.process is None and not Path(server.dir).exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()


def test_a_redis_holding_data_is_refused(redis_url, redis_client, tmp_path, monkeypatch):
    monkeypatch.setattr(cli.tempfile, "tempdir", str(tmp_path))  # where its log folder goes
    redis_client.set("precious", "1")
    assert cli.main([*TINY, "--redis-url", redis_url, "--sections", "enqueue"]) == 2
    assert redis_client.get("precious") == b"1"
    assert list(tmp_path.iterdir()) == []  # no empty log folder left behind


def cli_args(*argv):
    parser = cli.argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(argv)


# --- the wheel ships the engine only ------------------------------------------------------

BENCH_ONLY_MODULES = {"benchmarks", "bench_shapes", "bench_wurk", "celery", "rq", "dramatiq",
                      "huey"}


def test_the_package_neither_holds_nor_imports_the_bench():
    # What the wheel is built from: the bench lives in benchmarks/ at the checkout's root.
    package = Path(__file__).resolve().parents[2] / "wurk_django"
    files = [path for path in package.rglob("*")
             if path.is_file() and "__pycache__" not in path.parts]
    assert [str(p) for p in files if "bench" in p.relative_to(package).as_posix()
            or p.name == "redis_process.py"] == []
    imports = {(str(path.relative_to(package)), name)
               for path in files if path.suffix == ".py" for name in imported(path)}
    assert {entry for entry in imports if entry[1] in BENCH_ONLY_MODULES} == set()


def imported(path: Path) -> set[str]:
    """The top-level names of every module `path` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


# --- the arithmetic, without Redis or workers ---------------------------------------------

def info(writes: int, **calls) -> dict:
    return {"total_writes_processed": writes,
            **{f"cmdstat_{name}": {"calls": count} for name, count in calls.items()}}


def test_redis_costs_take_out_the_bench_and_the_bookkeeping():
    before = info(100, get=10, incr=5, lmove=0, info=3)
    after = info(100 + 1 + 7 + 20 + 10, get=17, incr=25, lmove=20, lrem=20, info=4)
    costs = redis_costs(before, after, own_round_trips=7, jobs=20)
    assert costs["by_command"] == {"lmove": 1.0, "lrem": 1.0}
    assert costs["commands_per_job"] == 2.0
    assert costs["round_trips_per_job"] == 0.5  # 10 of the system's for 20 jobs


def test_ratios_pair_runs_of_the_same_repeat():
    results = Results(["a", "b"], {})
    for repeat, (a, b) in enumerate([(100, 150), (200, 260), (50, 100)]):
        results.add("a", repeat, Sample("x", "jobs/s", a))
        results.add("b", repeat, Sample("x", "jobs/s", b))
    row = results.rows["x"]
    assert row.ratio("b", "a") == 1.5  # the median of 1.5, 1.3 and 2.0
    assert row.summary("a") == {"median": 100, "min": 50, "max": 200, "runs": [100, 200, 50]}
    header, body = results.cells()
    assert header[-1] == "b / a" and body[0][-1] == "1.50x"
    assert results.table(markdown=True).splitlines()[1].startswith("| --- |")


def test_io_runs_scale_with_threads_and_every_run_with_processes():
    assert runner.jobs_for("io", 10, 2, 1.0) == 20 * runner.BASE_JOBS["io"]
    assert runner.jobs_for("noop", 10, 2, 1.0) == 2 * runner.BASE_JOBS["noop"]
    assert runner.jobs_for("cpu", 1, 1, 0.0001) == 2


def test_progress_prints_one_line_per_run_off_a_terminal():
    stream = io.StringIO()
    progress = Progress(2, stream=stream)
    progress.step("wurk: first")
    progress.jobs(5, 10)  # no redraw off a terminal
    progress.step("wurk: second")
    progress.finish()
    assert stream.getvalue() == "[1/2] wurk: first\n[2/2] wurk: second\n"
