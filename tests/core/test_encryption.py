"""Argument encryption: what a push stores, what a worker hands the task, what the
dashboard shows, and the refusals that keep a secret from ever reaching Redis in
plaintext."""

import base64
import json
import os

import pytest

from tests.core import encrypted_jobs
from tests.core.encrypted_jobs import encrypted_tasks  # noqa: F401  (a fixture)
from wurk_django.core import Client, ConfigurationError, encryption, keys
from wurk_django.core.api import DeadSet, JobRecord
from wurk_django.core.api.key_versions import KeyVersionScan
from wurk_django.core.errors import EncryptionError
from wurk_django.core.payload import dumps, loads

SECRET = {"pan": "4111111111111111", "name": "Ada Lovelace"}


@pytest.fixture
def key_dir(tmp_path, monkeypatch):
    """Keys 1 and 2 as files; this process encrypts with version 1."""
    for version in (1, 2):
        (tmp_path / f"key-{version}.bin").write_bytes(os.urandom(32))
    monkeypatch.setenv("WURK_TEST_KEY_DIR", str(tmp_path))
    encryption.enable(1, encrypted_jobs.key_from_dir)
    yield tmp_path
    encryption.disable()


def queued(redis_client, queue="default") -> list[bytes]:
    return redis_client.lrange(keys.queue(queue), 0, -1)


def test_only_the_last_argument_is_stored_and_it_is_sealed(config, key_dir, redis_client):
    jid = encrypted_jobs.Charge.perform_async(7, SECRET)
    [raw] = queued(redis_client)
    assert b"4111" not in raw and b"Lovelace" not in raw
    job = loads(raw)
    assert job["jid"] == jid and job["encrypt"] is True and job["args"][0] == 7
    envelope = job["args"][1]
    assert sorted(envelope) == ["__wurk_enc__", "ct", "iv", "tag", "v"]
    assert envelope["__wurk_enc__"] is True and envelope["v"] == 1
    assert len(base64.b64decode(envelope["iv"])) == 12
    assert len(base64.b64decode(envelope["tag"])) == 16
    assert encryption.decrypt_envelope(envelope, encryption.settings_for(config)) == SECRET


def test_each_push_has_its_own_iv(config, key_dir, redis_client):
    encrypted_jobs.Charge.perform_bulk([[1, SECRET], [1, SECRET]])
    first, second = (loads(raw)["args"][1] for raw in queued(redis_client))
    assert first["iv"] != second["iv"] and first["ct"] != second["ct"]


def test_encrypt_without_keys_raises_and_pushes_nothing(config, redis_client):
    with pytest.raises(ConfigurationError, match="no encryption key is configured"):
        encrypted_jobs.Charge.perform_async(7, SECRET)
    with pytest.raises(ConfigurationError, match="no encryption key"):
        encrypted_jobs.Charge.perform_in(60, 7, SECRET)
    assert redis_client.dbsize() == 0


@pytest.mark.parametrize("key, message", [(None, "no encryption key for version 1"),
                                          (b"short", "must be 32 raw bytes, got 5 bytes"),
                                          ("a" * 32, "must be 32 raw bytes, got str")])
def test_a_missing_or_bad_active_key_raises_at_the_push(config, redis_client, key, message):
    encryption.enable(1, lambda version: key)
    try:
        with pytest.raises(EncryptionError, match=message):
            encrypted_jobs.Charge.perform_async(7, SECRET)
    finally:
        encryption.disable()
    assert redis_client.dbsize() == 0


def test_a_resolver_import_path_is_resolved_when_first_needed(redis_url, key_dir,
                                                              redis_client):
    from wurk_django.core import Config
    config = Config(redis_url=redis_url, encryption={
        "active_version": 2, "key_resolver": "tests.core.encrypted_jobs.key_from_dir"})
    Client(config).push({"class": encrypted_jobs.Charge, "args": [1, SECRET]})
    [raw] = queued(redis_client)
    assert loads(raw)["args"][1]["v"] == 2  # the config's own setting wins over enable()
    with pytest.raises(ConfigurationError, match="cannot be imported"):
        bad = Config(redis_url=redis_url, encryption={"active_version": 1,
                                                      "key_resolver": "no.such.module.fn"})
        Client(bad).push({"class": encrypted_jobs.Charge, "args": [1, SECRET]})


@pytest.mark.parametrize("value, message", [
    ({"active_version": 0, "key_resolver": "a.b"}, "active_version'] must be a whole number"),
    ({"active_version": 1}, "must be a dict with 'active_version' and 'key_resolver'"),
    ({"active_version": 1, "key_resolver": "nodots"}, "key_resolver'] must be a function"),
])
def test_bad_encryption_settings_are_refused_by_the_config(redis_url, value, message):
    from wurk_django.core import Config
    with pytest.raises(ConfigurationError, match=message):
        Config(redis_url=redis_url, encryption=value)


def test_a_sealed_argument_is_never_sealed_twice(config, key_dir, redis_client):
    encrypted_jobs.Charge.perform_async(7, SECRET)
    [raw] = queued(redis_client)
    redis_client.delete(keys.queue("default"))
    redis_client.zadd(keys.DEAD, {raw: 1})
    [entry] = DeadSet(config)
    entry.retry()  # a revival pushes the stored job again
    [again] = queued(redis_client)
    assert loads(again)["args"][1] == loads(raw)["args"][1]


@pytest.mark.usefixtures("encrypted_tasks")
def test_perform_inline_hands_the_task_the_plain_argument(config, key_dir, redis_client):
    encrypted_jobs.Charge.perform_inline(7, SECRET)
    [entry] = redis_client.lrange("test:ran", 0, -1)
    assert entry.decode().split()[2] == encrypted_jobs.digest(SECRET)


@pytest.mark.usefixtures("encrypted_tasks")
def test_fake_mode_stores_sealed_jobs_and_drain_runs_them(config, key_dir, redis_client):
    from wurk_django.core import testing
    with testing("fake"):
        encrypted_jobs.Charge.perform_async(7, SECRET)
        [job] = encrypted_jobs.Charge.jobs()
        assert "4111" not in json.dumps(job)
        assert encrypted_jobs.Charge.drain() == 1
    [entry] = redis_client.lrange("test:ran", 0, -1)
    assert entry.decode().split()[2] == encrypted_jobs.digest(SECRET)


def test_an_error_message_never_holds_the_secret(config, key_dir):
    error = encryption.redacted(ValueError(f"card {SECRET['pan']} declined"), SECRET)
    assert str(error) == "card [encrypted data] declined"

    class Odd(Exception):
        def __str__(self):
            return f"odd {SECRET['name']}"

    withheld = encryption.redacted(Odd(), SECRET)
    assert "Lovelace" not in str(withheld) and "withheld" in str(withheld)
    plain = ValueError("nothing secret here")
    assert encryption.redacted(plain, SECRET) is plain


# --- the dashboard's view of a stored job ------------------------------------------

def test_every_view_of_a_record_shows_the_placeholder(config, key_dir, redis_client):
    encrypted_jobs.Charge.perform_async(7, SECRET)
    [raw] = queued(redis_client)
    record = JobRecord(raw)
    assert record.encrypted and record.args == [7, "[encrypted data]"]
    assert '"args":[7,"[encrypted data]"]' in record.shown_value
    assert '"ct"' not in record.shown_value
    # An envelope is hidden even when the `encrypt` flag is lost.
    job = loads(raw)
    del job["encrypt"]
    unflagged = JobRecord(dumps(job))
    assert unflagged.encrypted and unflagged.args == [7, "[encrypted data]"]


def test_the_key_version_scan_counts_every_place(config, key_dir, redis_client):
    encrypted_jobs.Charge.perform_async(1, SECRET)
    encrypted_jobs.Charge.perform_in(300, 2, SECRET)
    encryption.enable(2, encrypted_jobs.key_from_dir)
    encrypted_jobs.Charge.perform_async(3, SECRET)
    [raw] = queued(redis_client)[:1]
    redis_client.zadd(keys.DEAD, {raw: 1})
    redis_client.lpush("queue:default|host|1|abcdef012345|0", raw)  # in flight
    Client(config).push({"class": "Plain", "args": [1]})
    found = KeyVersionScan(config).run()
    assert dict(found.counts) == {1: 2, 2: 3}
    assert found.scanned == 6
