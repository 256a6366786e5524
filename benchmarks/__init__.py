"""Wurk's benchmark: throughput, enqueue rate, latency, boot, memory, Redis cost and
dashboard paging, against another revision (`--vs`) or peers (`--peers`).

Run from a checkout (`make bench`, `python -m benchmarks --help`); it is not part of
the wheel, and the worker and the client never import it.
"""
