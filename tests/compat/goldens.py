"""The payloads captured from a real Sidekiq (golden/*.json, written by
ruby/capture_goldens.rb) and the field-by-field comparison of a Wurk job with one."""

import json
import re
from functools import cache
from pathlib import Path

from wurk_django.core.payload import loads

GOLDEN_DIR = Path(__file__).parent / "golden"
TIMESTAMP_FIELDS = ("created_at", "enqueued_at", "failed_at", "retried_at")
JID = re.compile(r"[0-9a-f]{24}")


@cache
def golden(name: str) -> dict:
    """One capture: {"produced_by", "key", "type", "entries"}."""
    return json.loads((GOLDEN_DIR / f"{name}.json").read_text("utf-8"))


def versions() -> dict:
    return json.loads((GOLDEN_DIR / "versions.json").read_text("utf-8"))


def member(name: str, index: int = 0) -> str:
    """The raw job JSON exactly as Sidekiq stored it."""
    return golden(name)["entries"][index]["member"]


def score(name: str, index: int = 0) -> float:
    return golden(name)["entries"][index]["score"]


def job(name: str, index: int = 0) -> dict:
    return loads(member(name, index))


def job_names() -> list[str]:
    """Every capture whose entries are job payloads (lists and sorted sets of jobs)."""
    names = []
    for path in sorted(GOLDEN_DIR.glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        if data.get("type") in ("list", "zset") and data["key"] != "processes":
            names.append(path.stem)
    return names


def type_differences(wurk_job: dict, sidekiq_job: dict) -> dict:
    """{field: (Wurk's JSON type, Sidekiq's)} for every field that is missing on one side
    or whose JSON types differ; empty when the two carry the same fields, typed alike."""
    differences = {}
    for field in dict.fromkeys([*sidekiq_job, *wurk_job]):
        ours = type(wurk_job[field]).__name__ if field in wurk_job else "missing"
        theirs = type(sidekiq_job[field]).__name__ if field in sidekiq_job else "missing"
        if ours != theirs:
            differences[field] = (ours, theirs)
    return differences


def expected_type_differences(timestamp_format: str, fields) -> dict:
    """The one documented difference: Wurk's default writes Sidekiq 8's integer ms where
    Sidekiq 6.4 writes float seconds; the "float" setting closes it."""
    if timestamp_format == "float":
        return {}
    return {field: ("int", "float") for field in fields if field in TIMESTAMP_FIELDS}


def in_sidekiq_order(fields, *, worker_push: bool = False) -> list[str]:
    """Wurk's field order rearranged as Sidekiq 6.4 orders the same fields. One harmless
    difference (JSON objects are unordered; no Sidekiq reader depends on the order):
    Sidekiq's `Worker.perform_async` merges `args` before `class` (its Client.push and
    perform_in do not). A booked retry's fields come in Sidekiq's order as they are."""
    fields = list(fields)
    if worker_push and fields.index("class") + 1 == fields.index("args"):
        fields.remove("args")
        fields.insert(fields.index("class"), "args")
    return fields


def as_seconds(value, timestamp_format: str) -> float:
    """A timestamp Wurk wrote, in epoch seconds, checking it has the configured form."""
    if timestamp_format == "float":
        assert type(value) is float, value
        return value
    assert type(value) is int, value
    return value / 1000
