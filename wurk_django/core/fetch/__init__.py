"""Fetchers: how processor threads take jobs from Redis and give them back."""

from .base import Fetcher, UnitOfWork
from .basic import BasicFetch

FETCHERS = {"basic": BasicFetch}


def fetcher_for(config, capsule, connection) -> Fetcher:
    return FETCHERS[config.fetch](config, capsule, connection)


__all__ = ["Fetcher", "UnitOfWork", "BasicFetch", "fetcher_for"]
