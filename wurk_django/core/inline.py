"""Running a job in the calling process: `perform_inline` and the testing modes."""

from typing import Any

from .aio import resolve
from .payload import dumps, loads
from .registry import REGISTRY


def execute(job: dict, config, chain) -> bool:
    """Run `perform` inside a server middleware chain; False if a middleware halted it."""
    return perform_in_chain(job, config, chain)[0]


def perform_in_chain(job: dict, config, chain) -> tuple[bool, Any]:
    """`execute`, also returning what `perform` returned (None when it did not run)."""
    task = REGISTRY.get(job["class"])
    instance = task()
    instance.jid = job.get("jid")
    returned = []

    def perform():
        returned.append(resolve(instance.perform(*job["args"])))
        return True  # perform's own return value must not read as a halt

    ran = bool(chain.invoke(config, (instance, job, job.get("queue")), perform))
    return ran, returned[0] if ran and returned else None


def run_inline(item: dict, config=None) -> Any:
    """Normalise, run client middleware, JSON round trip, then execute here and now.

    Returns what the task returned, as calling it would; None if a client or server
    middleware halted it. Exceptions reach the caller and no retry is booked; Redis is
    never touched.
    """
    from .client import Client
    client = Client(config)
    item = dict(item)
    item.pop("at", None)
    job = client.prepare(client.normalize(item))
    if job is None:
        return None
    return perform_in_chain(loads(dumps(job)), client.config,
                            client.config.server_middleware)[1]
