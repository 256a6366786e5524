"""Running a job in the calling process: `perform_inline` and the testing modes."""

from .aio import resolve
from .payload import dumps, loads
from .registry import REGISTRY


def execute(job: dict, config, chain) -> bool:
    """Run `perform` inside a server middleware chain; False if a middleware halted it."""
    task = REGISTRY.get(job["class"])
    instance = task()
    instance.jid = job.get("jid")

    def perform():
        resolve(instance.perform(*job["args"]))
        return True  # perform's own return value must not read as a halt

    return bool(chain.invoke(config, (instance, job, job.get("queue")), perform))


def run_inline(item: dict, config=None) -> bool | None:
    """Normalise, run client middleware, JSON round trip, then execute here and now.

    Exceptions reach the caller and no retry is booked; Redis is never touched.
    """
    from .client import Client
    client = Client(config)
    item = dict(item)
    item.pop("at", None)
    job = client.prepare(client.normalize(item))
    if job is None:
        return None
    if not execute(loads(dumps(job)), client.config, client.config.server_middleware):
        return None
    return True
