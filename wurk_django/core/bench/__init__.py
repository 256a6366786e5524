"""The benchmark suite: throughput, enqueue rate, latency, boot, memory, Redis cost
and dashboard paging of Wurk, against another revision (`--vs`) or peers (`--peers`).

Django-free: `python -m wurk_django.core.bench --help`. Nothing here is imported by
the worker or the client.
"""
