"""Peers: Celery, RQ, Dramatiq and Huey, run from their own virtualenv with the same jobs.

Each runs P processes x T threads where it can; the settings strings below are printed
with every result, so a table always says how each system was run.
"""

from pathlib import Path

from .targets import BenchError, Target

DEFAULT_PYTHON = ".venv/bench-peers/bin/python"
RQ_FORK_MAX_JOBS = 500  # it forks a process per job: 10,000 would take minutes


def celery_argv(target: Target, threads: int, processes: int) -> list[list[str]]:
    return [[target.python, "-m", "celery", "-A", "bench_celery", "worker", "--pool", "threads",
             "-c", str(threads), "-n", f"bench{index}@%h", "-Q", "default", "-l", "WARNING",
             "--without-gossip", "--without-mingle", "--without-heartbeat"]
            for index in range(processes)]


def rq_argv(worker_class: str):
    def argv(target: Target, threads: int, processes: int) -> list[list[str]]:
        # RQ runs one job at a time per worker process: T x P becomes T*P processes.
        # The Redis URL comes from RQ_REDIS_URL (see Target.url_env).
        return [[target.python, "-m", "rq.cli", "worker-pool", "-n", str(threads * processes),
                 "-w", worker_class, "-q", "default"]]
    return argv


def dramatiq_argv(target: Target, threads: int, processes: int) -> list[list[str]]:
    return [[target.python, "-m", "dramatiq", "bench_dramatiq", "--processes", str(processes),
             "--threads", str(threads)]]


def huey_argv(target: Target, threads: int, processes: int) -> list[list[str]]:
    return [[target.python, "-m", "huey.bin.huey_consumer", "bench_huey.huey", "-w", str(threads),
             "-k", "thread", "-n", "-q"] for _ in range(processes)]


SETTINGS = {
    "celery": "celery worker --pool threads -c THREADS, one worker per process, Redis broker, "
              "acks early (default), prefetch multiplier 4 (default), no result backend, "
              "no gossip/mingle/heartbeat",
    "rq": "rq worker-pool -n THREADS*PROCESSES -w rq.worker.SimpleWorker (no fork per job: "
          "RQ runs one job at a time per process), result_ttl=0",
    "rq-fork": "rq worker-pool -n THREADS*PROCESSES with RQ's default Worker, which forks "
               f"a child per job; result_ttl=0; at most {RQ_FORK_MAX_JOBS} jobs per run",
    "dramatiq": "dramatiq --processes PROCESSES --threads THREADS, RedisBroker, default "
                "middleware, max_retries=0",
    "huey": "huey_consumer -k thread -w THREADS -n, one consumer per process, RedisHuey "
            "(blocking pops), results=False",
}


def targets(python: str) -> list[Target]:
    if not Path(python).exists():
        raise BenchError(f"no peers interpreter at {python}: run `make bench-peers` (it "
                         f"creates .venv/bench-peers) or pass --peers-python")
    python = str(Path(python).absolute())  # workers run in other folders
    return [
        Target("celery", "celery", python, celery_argv, SETTINGS["celery"]),
        Target("rq", "rq", python, rq_argv("rq.worker.SimpleWorker"), SETTINGS["rq"],
               url_env=("RQ_REDIS_URL",)),
        Target("rq", "rq-fork", python, rq_argv("rq.worker.Worker"), SETTINGS["rq-fork"],
               max_jobs=RQ_FORK_MAX_JOBS, url_env=("RQ_REDIS_URL",)),
        Target("dramatiq", "dramatiq", python, dramatiq_argv, SETTINGS["dramatiq"]),
        Target("huey", "huey", python, huey_argv, SETTINGS["huey"]),
    ]
