"""The data API: read and change Wurk's (and Sidekiq's) data in Redis.

The dashboard and ops tools use only this package; the worker never imports it.
Every object takes an optional `config` (default: `get_default_config()`).
"""

from .base import Page, SearchResult
from .processes import EmbeddedProcessError, Process, ProcessSet, Work, Workers
from .queues import Queue, QueueRecord
from .records import TASK_WRAPPER, JobRecord
from .sorted_sets import DeadSet, JobSet, RetrySet, ScheduledSet, SortedEntry
from .stats import History, Stats

__all__ = ["DeadSet", "EmbeddedProcessError", "History", "JobRecord", "JobSet", "Page",
           "Process", "ProcessSet", "Queue", "QueueRecord", "RetrySet", "ScheduledSet",
           "SearchResult", "SortedEntry", "Stats", "TASK_WRAPPER", "Work", "Workers"]
