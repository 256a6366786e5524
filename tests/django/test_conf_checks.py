"""The WURK setting: how it becomes a Config, and every system check (pass and fail)."""

import pytest
from django.core import checks
from django.test import override_settings

from tests.support.redis_server import free_port
from wurk_django import conf
from wurk_django.core.errors import ConfigurationError


def run_checks():
    return [m for m in checks.run_checks(tags=["wurk"]) if m.id.startswith("wurk.")]


def ids(messages):
    return sorted(m.id for m in messages)


@override_settings(WURK={"CONCURRENCY": 7, "QUEUES": ["critical,3", "default"],
                         "TIMEOUT": 9, "TAG": "shop", "LABELS": ["eu"],
                         "POLL_INTERVAL_AVERAGE": 2, "HEARTBEAT_INTERVAL": 3,
                         "MAX_RETRIES": 4, "DEAD_MAX_JOBS": 50, "DEAD_TIMEOUT": 3600,
                         "ON_COMPLEX_ARGUMENTS": "warn", "SKIP_DEFAULT_JOB_LOGGING": True,
                         "DEFAULT_JOB_OPTIONS": {"backtrace": True},
                         "CAPSULES": {"serial": {"CONCURRENCY": 1, "QUEUES": ["one"]}}})
def test_every_setting_reaches_the_config():
    config = conf.build_config()
    assert config.concurrency == 7
    assert config.queues == (("critical", 3), ("default", 0))
    assert config.shutdown_timeout_s == 9 and config.tag == "shop"
    assert config.labels == {"eu"}
    assert config.poll_interval_average_s == 2 and config.heartbeat_interval_s == 3
    assert (config.max_retries, config.dead_max_jobs,
            config.dead_timeout_in_seconds) == (4, 50, 3600)
    assert config.on_complex_arguments == "warn" and config.skip_default_job_logging
    assert config.default_job_options == {"retry": True, "queue": "default", "backtrace": True}
    assert [c.name for c in config.capsules_] == ["default", "serial"]
    assert config.capsules_[1].concurrency == 1
    assert config.push_deferrer is not None and config.reloader is not None


def test_defaults_and_the_env_override(monkeypatch):
    monkeypatch.setenv("WURK_REDIS_URL", "redis://env-host:6390/2")
    with override_settings(WURK={"REDIS_URL": "redis://setting-host:6379/0"}):
        assert conf.build_config().redis_url == "redis://env-host:6390/2"
    monkeypatch.delenv("WURK_REDIS_URL")
    with override_settings(WURK={"REDIS_URL": "redis://setting-host:6379/0"}):
        config = conf.build_config()
    assert config.redis_url == "redis://setting-host:6379/0"
    assert config.concurrency == 5 and config.queues == (("default", 0),)
    assert config.tag == "tests"  # the basename of BASE_DIR


def test_cache_alias_reuses_a_django_redis_cache(monkeypatch, redis_url, redis_client):
    monkeypatch.delenv("WURK_REDIS_URL")
    caches = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
              "jobs": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": redis_url,
                       "OPTIONS": {"CONNECTION_POOL_KWARGS": {"health_check_interval": 7}}}}
    with override_settings(CACHES=caches, WURK={"CACHE_ALIAS": "jobs"}):
        config = conf.build_config()
        assert config.redis_url == redis_url
        assert config.redis_options == {"health_check_interval": 7}
        assert run_checks() == []
        from django.core.cache import caches as django_caches
        django_caches["jobs"].set("shared", 1)
    assert any(key.endswith(b"shared") for key in redis_client.keys("*"))
    with override_settings(CACHES=caches, WURK={"CACHE_ALIAS": "nope"}):
        with pytest.raises(ConfigurationError, match="not in CACHES"):
            conf.build_config()
        assert ids(run_checks()) == ["wurk.E004"]
    with override_settings(CACHES=caches, WURK={"CACHE_ALIAS": "default"}):
        assert ids(run_checks()) == ["wurk.E004"]


def test_a_good_setting_passes_every_check():
    with override_settings(WURK={"QUEUES": ["critical,3", "default,2", "low"],
                                 "CRON": [{"cron": "*/5 * * * *", "task": "a.b"}]}):
        assert run_checks() == []


@pytest.mark.parametrize("wurk,expected", [
    ("not a dict", "wurk.E001"),
    ({"CONCURRENCY": 2, "QUEUS": ["x"]}, "wurk.E002"),
    ({"QUEUES": "default"}, "wurk.E003"),
    ({"QUEUES": []}, "wurk.E003"),
    ({"QUEUES": ["critical,three"]}, "wurk.E003"),
    ({"QUEUES": ["critical,-1"]}, "wurk.E003"),
    ({"CRON": [{"cron": "every tuesday", "task": "a.b"}]}, "wurk.E005"),
    ({"CRON": "* * * * *"}, "wurk.E005"),
    ({"CONCURRENCY": 0}, "wurk.E004"),
    ({"TIMEOUT": "soon"}, "wurk.E004"),
    ({"ON_COMPLEX_ARGUMENTS": "ignore"}, "wurk.E004"),
])
def test_each_malformed_setting_fails_its_check(wurk, expected):
    with override_settings(WURK=wurk):
        messages = run_checks()
    assert ids(messages) == [expected]
    assert all(m.hint for m in messages)


def test_unknown_key_hint_says_did_you_mean():
    with override_settings(WURK={"CONCURENCY": 3}):
        [message] = run_checks()
    assert "CONCURENCY" in message.msg and "Did you mean 'CONCURRENCY'" in message.hint


def test_unroutable_queue_name_warns():
    with override_settings(WURK={"QUEUES": ["emails/high", "default"]}):
        [message] = run_checks()
    assert message.id == "wurk.W002" and message.level == checks.WARNING


def test_unreachable_redis_warns_with_the_password_masked(monkeypatch):
    monkeypatch.setenv("WURK_REDIS_URL", f"redis://:s3cret@127.0.0.1:{free_port()}/0")
    [message] = run_checks()
    assert message.id == "wurk.W001" and message.level == checks.WARNING
    assert "s3cret" not in message.msg and "****" in message.msg


def test_old_redis_is_an_error(monkeypatch):
    from wurk_django.core.redis import RedisConnection
    # A real server answers; only its reported version is made old, to exercise the rule.
    monkeypatch.setattr(RedisConnection, "server_version", lambda self: (6, 0, 16))
    [message] = run_checks()
    assert message.id == "wurk.E006" and "6.0.16" in message.msg


def test_embedded_setting_is_checked_and_checking_starts_no_server(monkeypatch, tmp_path):
    monkeypatch.delenv("WURK_REDIS_URL")
    with override_settings(WURK={"REDIS_URL": "embedded", "EMBEDDED": {"THREADS": 3}},
                           BASE_DIR=tmp_path):
        assert ids(run_checks()) == ["wurk.E007"]
    with override_settings(WURK={"REDIS_URL": "embedded", "EMBEDDED": True}, BASE_DIR=tmp_path):
        assert run_checks() == []
    assert not (tmp_path / ".wurk").exists()  # no project Redis was started


def test_timestamp_format_reaches_the_config_and_a_bad_one_fails_the_check():
    with override_settings(WURK={"TIMESTAMP_FORMAT": "float"}):
        assert conf.build_config().timestamp_format == "float"
        assert run_checks() == []
    with override_settings(WURK={}):
        assert conf.build_config().timestamp_format == "ms"
    with override_settings(WURK={"TIMESTAMP_FORMAT": "seconds"}):
        [message] = run_checks()
    assert message.id == "wurk.E004"
    assert message.msg.startswith("WURK['TIMESTAMP_FORMAT'] must be 'ms'")


# --- every bad setting is a check error naming its WURK key, never a traceback --------

@pytest.mark.parametrize("wurk, expected, text", [
    ({"REDIS_URL": "http://cache:6379/0"}, "wurk.E004",
     "WURK['REDIS_URL'] must be a redis://, rediss:// or unix:// URL"),
    ({"REDIS_URL": "not a url"}, "wurk.E004", "WURK['REDIS_URL'] must be a redis://"),
    ({"REDIS_OPTIONS": {"sockt_timeout": 3}}, "wurk.E004",
     "WURK['REDIS_OPTIONS']: 'sockt_timeout' is not a redis-py connection option"),
    ({"REDIS_OPTIONS": {"max_connections": 3}}, "wurk.E004", "REDIS_POOL_SIZE"),
    ({"MAX_MEMORY_MB": 0}, "wurk.E004", "WURK['MAX_MEMORY_MB'] must be > 0"),
    ({"MAX_MEMORY_MB": -512}, "wurk.E004", "WURK['MAX_MEMORY_MB'] must be > 0"),
    ({"PROCESSES": "2"}, "wurk.E004", "WURK['PROCESSES'] must be a whole number >= 1"),
    ({"PROCESSES": 0}, "wurk.E004", "WURK['PROCESSES'] must be a whole number >= 1"),
    ({"LOG_FORMAT": "xml"}, "wurk.E004", "WURK['LOG_FORMAT'] must be 'text' or 'json'"),
    ({"RESULT_TTL": "day"}, "wurk.E004", "WURK['RESULT_TTL'] must be a whole number"),
    ({"TRANSACTIONAL": "no"}, "wurk.E004", "WURK['TRANSACTIONAL'] must be True or False"),
    ({"VERBOSE": "false"}, "wurk.E004", "WURK['VERBOSE'] must be True or False"),
    ({"CONCURRENCY": 0}, "wurk.E004", "WURK['CONCURRENCY'] must be a whole number >= 1"),
    ({"TIMEOUT": float("inf")}, "wurk.E004", "WURK['TIMEOUT'] must be a number >= 0"),
    ({"DEFAULT_JOB_OPTIONS": {"encrypt": True}}, "wurk.E008",
     "encrypt=True is set on WURK['DEFAULT_JOB_OPTIONS'] but no encryption key is configured"),
    ({"DEFAULT_JOB_OPTIONS": {"unique_for": 0}}, "wurk.E004",
     "WURK['DEFAULT_JOB_OPTIONS']: 'unique_for' must be more than 0"),
    ({"ENCRYPTION": {"ACTIVE_VERSION": 0, "KEY_RESOLVER": "a.b"}}, "wurk.E008",
     "WURK['ENCRYPTION']['active_version'] must be a whole number >= 1"),
    ({"ENCRYPTION": {"ACTIVE_VERSION": 1, "KEY_RESOLVER": "no_such_module.key_for"}},
     "wurk.E008", "the encryption key resolver 'no_such_module.key_for' cannot be imported"),
    ({"RELIABLE_PUSH": {"BUFFER": 0}}, "wurk.E004",
     "WURK['RELIABLE_PUSH']['buffer'] must be a whole number of jobs >= 1"),
    ({"RELIABLE_PUSH": {"OVERFLOW": "block"}}, "wurk.E004",
     "WURK['RELIABLE_PUSH']['overflow'] must be 'drop_oldest' or 'raise'"),
    ({"RELIABLE_SCHEDULER": "yes"}, "wurk.E004", "WURK['RELIABLE_SCHEDULER'] must be True"),
    ({"QUEUES": ["critical,three"]}, "wurk.E003", "WURK['QUEUES']: queue entry"),
    ({"CRON": [{"cron": "*/61 * * * *", "task": "a.b"}]}, "wurk.E005",
     "WURK['CRON'][0] (a.b): '*/61 * * * *': the minute step '*/61' must be between 1 and 60"),
    ({"CRON_TZ": "Mars/Olympus"}, "wurk.E005", "WURK['CRON_TZ']: unknown time zone"),
    ({"EMBEDDED": {"CONCURRENCY": 0}}, "wurk.E007",
     "WURK['EMBEDDED']['CONCURRENCY'] must be a whole number >= 1"),
])
def test_a_bad_value_is_a_check_error_naming_its_key(monkeypatch, wurk, expected, text):
    monkeypatch.delenv("WURK_REDIS_URL")  # else the environment's URL wins over REDIS_URL
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    with override_settings(WURK=wurk):
        messages = run_checks()
    assert ids(messages) == [expected], messages
    assert messages[0].msg.startswith(text) or text in messages[0].msg, messages[0].msg
    assert messages[0].hint


def test_the_check_reports_what_building_the_config_raises():
    # One validation, told once: the check's message is the build's error.
    with override_settings(WURK={"QUEUES": ["critical,three"]}):
        with pytest.raises(ConfigurationError) as info:
            conf.build_config()
        [message] = run_checks()
    assert message.msg == f"{info.value}."


def test_a_bad_redis_url_from_the_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv("WURK_REDIS_URL", "http://cache:6379/0")
    with override_settings(WURK={}):
        [message] = run_checks()
    assert message.id == "wurk.E004"
    assert message.msg.startswith("The WURK_REDIS_URL environment variable must be a redis://")


def test_a_password_in_a_bad_url_is_masked(monkeypatch):
    monkeypatch.setenv("WURK_REDIS_URL", "http://:s3cret@cache:6379/0")
    [message] = run_checks()
    assert "s3cret" not in message.msg and "****" in message.msg


def test_a_bad_task_cron_option_is_a_check_error_not_an_import_error():
    from wurk_django import wurk_task
    from wurk_django.core.registry import REGISTRY

    @wurk_task(cron="*/61 * * * *")  # defining it (importing tasks.py) must not fail
    def every_61():
        pass

    try:
        with override_settings(WURK={}):
            [message] = run_checks()
    finally:
        REGISTRY.unregister(every_61.name)
    assert message.id == "wurk.E005"
    assert "every_61 (cron=...): cron: '*/61 * * * *'" in message.msg and message.hint
