"""The task `benchmarks/empty_jobs.py` runs: it does nothing, so only Wurk is measured."""

from wurk_django.core import wurk_task


@wurk_task(queue="default")
def empty():
    pass
