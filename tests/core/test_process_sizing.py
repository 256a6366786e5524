"""How many processes a worker forks: "auto" from the affinity mask and a real cgroup CPU
quota, fractions rounded as Sidekiq's swarm rounds them, and WURK_COUNT / SIDEKIQ_COUNT
and WURK_MAXMEM_MB / SIDEKIQ_MAXMEM_MB for workers started without the flags."""

import os
import secrets
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.workers import children, wait_until
from wurk_django.core.config import ProcessOptions
from wurk_django.core.errors import ConfigurationError
from wurk_django.core.sizing import cgroup_quota, cpu_budget

CORE_CLI = [sys.executable, "-m", "wurk_django.core"]
IDLE = ("-c", "1", "--heartbeat-interval", "1", "-t", "1")
CPUS = len(os.sched_getaffinity(0))


@pytest.mark.parametrize("given, count", [(1, 1), (3, 3), (2.5, 3), (2.49, 2), (0.5, 1)])
def test_a_fraction_is_rounded_half_up_as_sidekiq_swarm_rounds_it(given, count):
    assert ProcessOptions(processes=given).processes == count


@pytest.mark.parametrize("given", [0, 0.4, -1, "2", "many", True, float("nan")])
def test_a_count_that_is_not_one_is_an_error_naming_the_field(given):
    with pytest.raises(ConfigurationError, match="^processes must be a whole number >= 1"):
        ProcessOptions(processes=given)


def test_auto_without_a_quota_is_one_process_per_cpu_in_the_affinity_mask():
    assert ProcessOptions(processes="auto").processes == CPUS == cpu_budget().processes


# --- cgroup files, as a container or a Kubernetes pod sees them ----------------------

def fake_proc(tmp_path: Path, cgroup: str, mounts: list[str]) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text("".join(f"{line}\n" for line in mounts))
    return proc


def write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text)


def test_a_cgroup_v2_limit_on_a_parent_counts_and_the_tightest_one_wins(tmp_path):
    unified = tmp_path / "unified"
    write(unified / "kubepods" / "pod1", cpu_max="150000 100000\n")
    write(unified / "kubepods" / "pod1" / "app", cpu_max="max 100000\n")
    write(unified / "kubepods", cpu_max="400000 100000\n")
    proc = fake_proc(tmp_path, "0::/kubepods/pod1/app\n",
                     [f"30 23 0:27 / {unified} rw,relatime - cgroup2 cgroup2 rw"])
    assert cgroup_quota(proc) == 1.5
    budget = cpu_budget(proc)
    if CPUS > 1.5:
        assert budget.reason.startswith("a cgroup CPU quota of 1.5 CPUs")
        assert budget.processes == 2


def test_a_cgroup_v1_cfs_quota_is_read_through_the_container_mount_root(tmp_path):
    mount = tmp_path / "cpu,cpuacct"
    write(mount, cpu_cfs_quota_us="50000\n", cpu_cfs_period_us="100000\n")
    proc = fake_proc(tmp_path, "4:cpu,cpuacct:/docker/abc123\n1:name=systemd:/docker/abc\n",
                     [f"32 31 0:29 /docker/abc123 {mount} rw - cgroup cgroup rw,cpu,cpuacct"])
    assert cgroup_quota(proc) == 0.5
    assert cpu_budget(proc).processes == 1


def test_no_quota_and_no_cgroup_files_mean_no_limit(tmp_path):
    unified = tmp_path / "unified"
    write(unified, cpu_max="max 100000\n")
    proc = fake_proc(tmp_path, "0::/\n", [f"30 23 0:27 / {unified} rw - cgroup2 cgroup2 rw"])
    assert cgroup_quota(proc) is None
    assert cgroup_quota(tmp_path / "missing") is None


# --- real worker processes ------------------------------------------------------------

pytest_slow = pytest.mark.slow


def started_processes(worker) -> int:
    """How many processes run jobs: a supervisor's children, or the worker itself."""
    worker.wait_for_log("starting")
    if "Wurk supervisor" not in worker.log():
        return 1
    return len(wait_until(lambda: children(worker.pid), 20, message="the children"))


@pytest_slow
def test_auto_follows_the_affinity_mask_of_the_process(start_worker):
    pinned = start_worker("-p", "auto", *IDLE, command=["taskset", "-c", "0", *CORE_CLI])
    pinned.wait_for_log("One worker process (processes 'auto': 1 CPUs in its affinity mask)")
    assert started_processes(pinned) == 1
    if CPUS > 1:
        everything = start_worker("-p", "auto", *IDLE)
        everything.wait_for_log(f"starting {CPUS} worker processes (processes 'auto': "
                                f"{CPUS} CPUs in its affinity mask)")
        wait_until(lambda: len(children(everything.pid)) == CPUS, 20)
        stop(everything)


def cpu_cgroup(quota_us: int) -> Path:
    """A real cgroup with a CPU quota (v2 cpu.max where the unified hierarchy has the
    cpu controller, else v1 CFS), or skip saying why one cannot be made here."""
    root = Path("/sys/fs/cgroup")
    name = f"wurk-test-{secrets.token_hex(4)}"
    v2 = (root / "cgroup.controllers").exists() and \
        "cpu" in (root / "cgroup.controllers").read_text().split()
    folder = root / name if v2 else root / "cpu" / name
    try:
        folder.mkdir()
        if v2:
            (folder / "cpu.max").write_text(f"{quota_us} 100000\n")
        else:
            (folder / "cpu.cfs_period_us").write_text("100000\n")
            (folder / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"cannot make a cgroup with a CPU quota here ({exc}); run as root on a "
                    f"host with a writable cpu cgroup controller")
    return folder


@pytest_slow
def test_auto_honours_a_real_cgroup_cpu_quota(start_worker):
    folder = cpu_cgroup(50_000)  # half a CPU
    try:
        join = ["sh", "-c", f'echo $$ > {folder}/cgroup.procs && exec "$@"', "sh", *CORE_CLI]
        worker = start_worker("-p", "auto", *IDLE, command=join)
        worker.wait_for_log("One worker process (processes 'auto': a cgroup CPU quota of "
                            "0.5 CPUs")
        assert started_processes(worker) == 1
        worker.stop()
    finally:
        folder.rmdir()


@pytest_slow
@pytest.mark.parametrize("env, flags, count", [
    ({"WURK_COUNT": "2"}, (), 2),
    ({"SIDEKIQ_COUNT": "1.5"}, (), 2),
    ({"WURK_COUNT": "2", "SIDEKIQ_COUNT": "3"}, (), 2),
    ({"WURK_COUNT": "2"}, ("-p", "1"), 1),
    ({"SIDEKIQ_MAXMEM_MB": "300"}, (), 1),
])
def test_the_environment_sizes_a_worker_started_without_flags(start_worker, env, flags, count):
    worker = start_worker(*flags, *IDLE, env=env)
    assert started_processes(worker) == count
    if "SIDEKIQ_MAXMEM_MB" in env:  # a memory cap runs the one process under a supervisor
        assert "starting 1 worker processes" in worker.log()
    stop(worker)


def stop(worker) -> None:
    """A graceful stop: a supervisor SIGKILLed at teardown leaves its children stopping
    (and writing to Redis) during the next test."""
    worker.send(15)
    assert worker.wait(30) == 0


@pytest_slow
@pytest.mark.parametrize("env, text", [
    ({"WURK_COUNT": "lots"}, ("wurk: $WURK_COUNT must be a whole number >= 1, 'auto' (one "
                              "per CPU) or a fraction, got 'lots'")),
    ({"SIDEKIQ_COUNT": "0"}, "wurk: $SIDEKIQ_COUNT must be a whole number >= 1, got 0"),
    ({"WURK_MAXMEM_MB": "300MB"}, ("wurk: $WURK_MAXMEM_MB must be a number of megabytes (0 "
                                   "for no cap), got '300MB'")),
])
def test_a_bad_variable_is_one_clean_line_naming_it(start_worker, env, text):
    worker = start_worker(*IDLE, env=env)
    assert worker.wait(30) == 1
    assert text in worker.log() and "Traceback" not in worker.log()
