"""Pushes inside `transaction.atomic()` wait for the commit and vanish on rollback."""

import time

import pytest
from django.db import connection, transaction
from django.test import override_settings

from tests.djangoapp.tasks import mark_order
from wurk_django import wurk_task
from wurk_django.core import JobArgumentError
from wurk_django.core.config import set_default_config
from wurk_django.core.registry import REGISTRY
from wurk_django.db import close_db_connections_around

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def django_config():
    set_default_config(None)  # rebuilt from settings (WURK_REDIS_URL = the test server)
    yield
    set_default_config(None)


def queued(redis_client):
    return redis_client.llen("queue:django")


def test_push_inside_atomic_waits_for_commit(redis_client):
    with transaction.atomic():
        jid = mark_order.perform_async(1, "paid")
        assert len(jid) == 24  # known at once, before the push happens
        assert queued(redis_client) == 0
    assert queued(redis_client) == 1


def test_push_is_dropped_on_rollback(redis_client):
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            mark_order.perform_async(1, "paid")
            raise RuntimeError("order failed")
    assert queued(redis_client) == 0


def test_nested_savepoint_rollback_drops_only_its_push(redis_client):
    with transaction.atomic():
        mark_order.perform_async(1, "outer")
        try:
            with transaction.atomic():
                mark_order.perform_async(2, "inner")
                raise ValueError
        except ValueError:
            pass
    assert queued(redis_client) == 1


def test_outside_a_transaction_pushes_at_once(redis_client):
    mark_order.perform_async(1, "now")
    assert queued(redis_client) == 1


def test_per_call_opt_out_pushes_at_once(redis_client):
    with transaction.atomic():
        mark_order.set(transactional=False).perform_async(1, "now")
        assert queued(redis_client) == 1


def test_global_opt_out_pushes_at_once(redis_client):
    with override_settings(WURK={"TRANSACTIONAL": False}):
        set_default_config(None)
        with transaction.atomic():
            mark_order.perform_async(1, "now")
            assert queued(redis_client) == 1


def test_bad_arguments_fail_at_the_call_not_at_commit(redis_client):
    with transaction.atomic():
        with pytest.raises(TypeError, match="argument 0"):
            mark_order.perform_async({1, 2}, "x")


def test_a_lone_surrogate_fails_at_the_call_not_at_commit(redis_client):
    # Only the UTF-8 encode finds it; the deferred push must still fail here, where the
    # caller can handle it, not in the commit hook after the transaction is gone.
    with transaction.atomic():
        with pytest.raises(JobArgumentError, match="argument 1 .*lone surrogate"):
            mark_order.perform_async(1, "bad \ud800")
    assert queued(redis_client) == 0


def test_the_transactional_setting_is_read_once_with_the_config(redis_client):
    with override_settings(WURK={"TRANSACTIONAL": False}):
        set_default_config(None)
        mark_order.perform_async(0, "builds the config")
    # The config built above keeps its default; pushes no longer read settings.
    with override_settings(WURK={"TRANSACTIONAL": True}):
        with transaction.atomic():
            mark_order.perform_async(1, "now")
            assert queued(redis_client) == 2


def test_a_tasks_own_transactional_option_acts_on_every_push(redis_client):
    # Before, only .set(transactional=...) was read; the task's option did nothing.
    untied = wurk_task(queue="django", transactional=False)(lambda *args: None)
    try:
        with transaction.atomic():
            untied.perform_async(1)
            assert queued(redis_client) == 1
            untied.set(transactional=True).perform_async(2)
            assert queued(redis_client) == 1  # a call may still choose
        assert queued(redis_client) == 2
    finally:
        REGISTRY.unregister(untied.name)


def test_stale_connections_are_closed_around_each_job():
    connection.ensure_connection()
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
    seen = []
    close_db_connections_around(lambda: seen.append(connection.connection))
    assert seen == [None]  # closed before the job, so the job reconnects afresh
