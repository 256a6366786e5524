"""The data API: read and change Wurk's (and Sidekiq's) data in Redis.

The dashboard and ops tools use only this package; the worker never imports it.
Every object takes an optional `config` (default: `get_default_config()`).
"""

from . import history
from .base import Page, SearchResult
from .metrics import ClassTotals, JobMetrics, MetricsQuery, TopJobs
from .periodic import Loop, LoopSet
from .processes import EmbeddedProcessError, Process, ProcessSet, Work, Workers
from .queues import Queue, QueueRecord, QueueSummary
from .records import TASK_WRAPPER, JobRecord
from .server import RedisServer
from .sorted_sets import DeadSet, JobSet, RetrySet, ScheduledSet, SortedEntry
from .stats import History, Stats

__all__ = ["ClassTotals", "DeadSet", "EmbeddedProcessError", "History", "JobMetrics",
           "JobRecord", "JobSet", "Loop", "LoopSet", "MetricsQuery", "Page", "Process",
           "ProcessSet", "Queue", "QueueRecord", "QueueSummary", "RedisServer", "RetrySet",
           "ScheduledSet", "SearchResult", "SortedEntry", "Stats", "TASK_WRAPPER", "TopJobs",
           "Work", "Workers", "history"]
