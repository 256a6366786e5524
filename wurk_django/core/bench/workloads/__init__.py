"""The bench's task modules, run by every process a bench starts.

This directory goes on the PYTHONPATH of each worker and probe, and its modules are
imported by their top-level names (`bench_wurk`, `bench_celery`, ...): so any git
revision of Wurk, or a peer in its own virtualenv without Wurk installed, runs the same
task bodies from the same files.
"""
