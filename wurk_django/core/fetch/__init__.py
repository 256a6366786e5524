"""Fetchers: how processor threads take jobs from Redis and give them back."""

from .base import Fetcher, UnitOfWork
from .basic import BasicFetch
from .reliable import ReliableFetch

FETCHERS = {"basic": BasicFetch, "reliable": ReliableFetch}


def fetcher_for(config, capsule, connection) -> Fetcher:
    return FETCHERS[config.fetch](config, capsule, connection)


__all__ = ["Fetcher", "UnitOfWork", "BasicFetch", "ReliableFetch", "fetcher_for"]
