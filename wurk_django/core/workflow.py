"""Workflows: steps that run one after another, each a group of jobs that run in
parallel (a step may also hold whole workflows), built from batches the way Sidekiq's
wiki page "Really Complex Workflows with Batches" builds them by hand: one batch for the
workflow, a child batch per step, each step started by the previous step's `success`
callback, so the workflow's own callbacks fire once the last step has succeeded and its
progress is one batch tree.

Step batches get bids derived from their parent and position, so a step callback that
runs twice (its worker killed after starting the next step) starts nothing twice.
"""

import base64
import hashlib
import json
from typing import Any, cast

from .batch import Batch, Callback
from .batch_status import BatchStatus
from .client import Client
from .errors import BatchError
from .options import payload_options
from .registry import task_class
from .task import Setter


def derived_bid(parent_bid: str, label: str) -> str:
    """A bid made from its parent's and a label: the same step always has the same bid."""
    digest = hashlib.sha1(f"{parent_bid}:{label}".encode()).digest()[:10]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _job_item(item: Any) -> dict:
    """One job of a step: a task (no arguments), or `(task, *args)`; the task may be a
    `@wurk_task` function, a Job class, `task.set(...)`, or a registered wire name."""
    target, args = (item[0], list(item[1:])) if isinstance(item, tuple) else (item, [])
    options = {}
    if isinstance(target, Setter):
        options = payload_options(target.options)
        target = target.task
    task = task_class(target)
    if task is not None:
        name = cast(Any, task).wire_name
    elif isinstance(target, str) and target:
        name = target
    else:
        raise BatchError(f"a workflow step takes tasks, (task, *args) tuples or workflows; "
                         f"got {item!r}")
    try:
        json.dumps([args, options], allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise BatchError(f"workflow job {name}: its arguments must be JSON ({exc})") from None
    return {"class": name, "args": args, "options": options}


class Workflow:
    """Steps run in order; the jobs (and workflows) of one step run in parallel.

        flow = (Workflow(description="Import 42", on_success=Notify)
                .step(*[(fetch_page, 42, page) for page in range(10)])   # fan out
                .step((merge_pages, 42))                                  # fan in
                .step((publish, 42)))                                     # finalise
        batch = flow.run()

    The workflow's callbacks (`on_success`...) are those of its batch; a failing job
    holds its step (and the workflow) until its retries succeed.
    """

    def __init__(self, description: str | None = None, *, on_complete: Callback | None = None,
                 on_success: Callback | None = None, on_death: Callback | None = None,
                 callback_queue: str | None = None, tags: list[str] | None = None) -> None:
        # Built now, so a bad option or callback is reported here, not when it runs.
        self._batch_options: dict[str, Any] = {
            "description": description, "on_complete": on_complete, "on_success": on_success,
            "on_death": on_death, "callback_queue": callback_queue, "tags": tags}
        probe = Batch(**self._batch_options)
        self._spec: dict[str, Any] = {"description": description or "", "tags": probe.tags,
                      "callback_queue": probe.callback_queue,
                      "callbacks": [json.loads(entry) for entry in probe._callbacks],
                      "steps": []}

    def step(self, *items: Any) -> "Workflow":
        """Add a step: jobs and workflows that run in parallel once the previous step
        has succeeded."""
        if not items:
            raise BatchError("a workflow step needs at least one job or workflow")
        step = [{"workflow": item.spec()} if isinstance(item, Workflow) else _job_item(item)
                for item in items]
        self._spec["steps"].append(step)
        return self

    def spec(self) -> dict:
        if not self._spec["steps"]:
            raise BatchError("a workflow needs at least one step")
        return json.loads(json.dumps(self._spec))

    def run(self) -> Batch:
        """Start the workflow (its first step); returns the workflow's batch, whose
        status and children show the progress."""
        spec = self.spec()
        batch = Batch(**self._batch_options)
        with batch:
            start_step(spec, 0, batch.bid)
        return batch


def _open_workflow(spec: dict, bid: str) -> None:
    """A nested workflow inside a step's block: its batch (a child of the step) and its
    first step."""
    batch = Batch.create(bid, description=spec["description"] or None, tags=spec["tags"],
                         callback_queue=spec["callback_queue"])
    for event, target, options in spec["callbacks"]:
        batch.on(event, target, options)
    with batch:
        start_step(spec, 0, bid)


def start_step(spec: dict, index: int, workflow_bid: str) -> None:
    """Open step `index` of a workflow as a child batch of the workflow's batch, which
    must be the batch open here (a block of it, or its running job)."""
    steps = spec["steps"]
    if index >= len(steps):
        return  # the last step succeeded: the workflow's batch finishes with this job
    label = spec["description"] or "workflow"
    step_bid = derived_bid(workflow_bid, f"step{index}")
    step = Batch.create(step_bid, description=f"{label}: step {index + 1} of {len(steps)}",
                        tags=spec["tags"], callback_queue=spec["callback_queue"],
                        on_success=(StepDone, {"flow": spec, "step": index}))
    client = Client()
    with step:
        for position, item in enumerate(steps[index]):
            if "workflow" in item:
                _open_workflow(item["workflow"], derived_bid(step_bid, f"flow{position}"))
            else:
                client.push({"class": item["class"], "args": item["args"],
                             **item["options"]})


class StepDone:
    """The success callback of a step: start the next one inside the workflow's batch
    (this callback is a job of that batch, so the workflow waits for it)."""

    def on_success(self, status: BatchStatus, options: dict) -> None:
        workflow_bid = status.parent_bid
        with Batch(workflow_bid):
            start_step(options["flow"], options["step"] + 1, workflow_bid)
