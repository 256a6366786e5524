"""The job guarantees from Django: WURK['ENCRYPTION'], WURK['RELIABLE_PUSH'] and
WURK['RELIABLE_SCHEDULER'] reach the Config, `manage.py check` refuses encrypt=True
without keys, a deferred push refuses at the call site, and `manage.py
wurk_encryption_keys` counts what each key version still protects."""

import io
import os

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from tests.core import encrypted_jobs
from tests.django.dashboard_helpers import users_fixture  # noqa: F401  (the `users` fixture)
from wurk_django import conf, wurk_task
from wurk_django.core import ConfigurationError, encryption, keys
from wurk_django.core.config import set_default_config
from wurk_django.core.redis import close_connections
from wurk_django.core.registry import REGISTRY

RESOLVER = "tests.core.encrypted_jobs.key_from_dir"
SECRET = {"pan": "4111111111111111"}


@pytest.fixture(autouse=True)
def fresh_config():
    set_default_config(None)
    encryption.forget_keys()
    yield
    set_default_config(None)
    encryption.forget_keys()
    close_connections()


@pytest.fixture
def key_dir(tmp_path, monkeypatch):
    for version in (1, 2):
        (tmp_path / f"key-{version}.bin").write_bytes(os.urandom(32))
    monkeypatch.setenv("WURK_TEST_KEY_DIR", str(tmp_path))
    return tmp_path


def wurk_checks() -> list:
    return [m for m in checks.run_checks(tags=["wurk"]) if m.id.startswith("wurk.E")]


def test_the_settings_reach_the_config(key_dir):
    wurk = {"RELIABLE_PUSH": {"BUFFER": 50, "OVERFLOW": "raise"}, "RELIABLE_SCHEDULER": False,
            "ENCRYPTION": {"ACTIVE_VERSION": 2, "KEY_RESOLVER": RESOLVER}}
    with override_settings(WURK=wurk):
        config = conf.build_config()
    assert config.reliable_push == {"buffer": 50, "overflow": "raise"}
    assert config.reliable_scheduler is False
    assert config.encryption == {"active_version": 2, "key_resolver": RESOLVER}
    assert conf.build_config().reliable_push is None  # off unless asked for
    assert conf.build_config().reliable_scheduler is True  # on unless turned off


def test_check_refuses_an_encrypted_task_without_keys():
    task = wurk_task(encrypt=True)(lambda bag: None)
    try:
        with override_settings(WURK={}):
            [error] = wurk_checks()
        assert error.id == "wurk.E008" and task.name in error.msg
        with override_settings(WURK={"ENCRYPTION": {"ACTIVE_VERSION": 1,
                                                    "KEY_RESOLVER": RESOLVER}}):
            assert wurk_checks() == []
    finally:
        REGISTRY.unregister(task.name)


@pytest.mark.django_db(transaction=True)
def test_an_encrypted_push_inside_atomic_without_keys_fails_at_the_call(redis_client):
    with override_settings(WURK={}), \
            pytest.raises(ConfigurationError, match="no encryption key"), transaction.atomic():
        encrypted_jobs.Charge.perform_async(1, SECRET)
    assert redis_client.dbsize() == 0


def test_the_key_versions_command_counts_each_version(key_dir, redis_client):
    wurk = {"ENCRYPTION": {"ACTIVE_VERSION": 1, "KEY_RESOLVER": RESOLVER}}
    with override_settings(WURK=wurk):
        encrypted_jobs.Charge.perform_bulk([[n, SECRET] for n in range(3)])
    set_default_config(None)
    wurk["ENCRYPTION"]["ACTIVE_VERSION"] = 2
    with override_settings(WURK=wurk):
        encrypted_jobs.Charge.perform_in(600, 9, SECRET)
        out = io.StringIO()
        call_command("wurk_encryption_keys", stdout=out)
    text = out.getvalue()
    assert "key version 1: 3 jobs" in text and "key version 2 (active): 1 jobs" in text
    assert "Keep the keys of version(s) 1" in text
    assert "4111" not in text


# --- the dashboard: every view of an encrypted argument is the placeholder ---------------

@pytest.mark.django_db(transaction=True)  # pushes go out at once, not at a commit
def test_the_dashboard_shows_no_view_of_an_encrypted_argument(key_dir, redis_client, users):
    from tests.django.dashboard_helpers import Api, ok
    wurk = {"ENCRYPTION": {"ACTIVE_VERSION": 1, "KEY_RESOLVER": RESOLVER}}
    with override_settings(WURK=wurk):
        jid = encrypted_jobs.Charge.perform_async("user-7", SECRET)
        encrypted_jobs.Charge.perform_in(600, "user-8", SECRET)
        root = Api(users["superuser"])
        rows = [ok(root.get("queues/default/jobs"))["items"][0],
                ok(root.get("queues/default/jobs", q=jid))["items"][0],  # a search hit
                ok(root.get("sets/scheduled", q="user-8"))["items"][0]]
        detail = ok(root.get(f"sets/scheduled/{rows[2]['key']}"))
    for row in rows:
        assert row["encrypted"] is True and "[encrypted data]" in row["args_preview"]
        assert "__wurk_enc__" not in row["args_preview"]
    assert detail["args"] == ["user-8", "[encrypted data]"]
    assert '"[encrypted data]"' in detail["raw"] and '"ct"' not in detail["raw"]
    assert redis_client.zcard(keys.SCHEDULE) == 1
