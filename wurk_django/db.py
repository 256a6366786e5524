"""Database hygiene around jobs, and pushes that wait for the transaction to commit."""

from django.db import close_old_connections, connections, transaction


def close_db_connections_around(run):
    """Run a job as Django runs a request: drop stale or broken DB connections before
    and after, so a worker that lives for weeks never uses a dead connection."""
    close_old_connections()
    try:
        return run()
    finally:
        close_old_connections()


def commit_deferrer(default: bool):
    """The Config's `push_deferrer`, with WURK['TRANSACTIONAL'] (read once, when the
    config is built) as the default for pushes that do not choose."""

    def defer(push, transactional) -> bool:
        return defer_until_commit(push, default if transactional is None else transactional)

    return defer


def defer_until_commit(push, transactional) -> bool:
    """Hold a push until the surrounding `atomic()` block commits; drop it on rollback.

    `transactional` is True, False, or a database alias to watch. Returns True when
    the push was deferred.
    """
    if not transactional:
        return False
    using = transactional if isinstance(transactional, str) else None
    connection = connections[using or "default"]
    if not connection.in_atomic_block:
        return False
    transaction.on_commit(push, using=using)
    return True
