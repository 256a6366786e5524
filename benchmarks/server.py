"""A private redis-server on a free loopback port, and the measuring side's readings."""

from .redis_process import PrivateRedis as _PrivateRedis
from .targets import die_with_parent


class PrivateRedis(_PrivateRedis):
    """The bench's Redis: it dies with the bench, even when the bench is killed."""

    def __init__(self):
        super().__init__(preexec_fn=die_with_parent)


def command_calls(info: dict) -> dict[str, int]:
    """`INFO all`'s commandstats as {command: calls}."""
    return {name[len("cmdstat_"):]: value["calls"] for name, value in info.items()
            if name.startswith("cmdstat_")}


def redis_costs(before: dict, after: dict, own_round_trips: int, jobs: int) -> dict:
    """Commands and round trips per job between two `INFO all` readings.

    Taken away: the bench's own counter reads (GET) and the first INFO, and each job's
    bookkeeping INCR (one command, one round trip), so what is left is the system's.
    `total_writes_processed` counts reply writes: one per round trip of any client.
    """
    calls_before, calls_after = command_calls(before), command_calls(after)
    calls = {name: count - calls_before.get(name, 0) for name, count in calls_after.items()}
    calls.pop("info", None)
    calls["get"] = calls.get("get", 0) - own_round_trips
    calls["incr"] = calls.get("incr", 0) - jobs
    calls = {name: count for name, count in calls.items() if count > 0}
    writes = after["total_writes_processed"] - before["total_writes_processed"]
    round_trips = writes - own_round_trips - 1 - jobs
    per_job = max(jobs, 1)
    return {"commands_per_job": sum(calls.values()) / per_job,
            "round_trips_per_job": round_trips / per_job,
            "by_command": {name: count / per_job for name, count in sorted(calls.items())}}
