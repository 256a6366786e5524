"""Encrypted jobs through real workers: no byte in Redis holds a secret, an argument that
cannot be decrypted goes straight to the dead set and runs once its key is back, and a
key rotation runs the jobs of both keys."""

import base64
import json
import os

import pytest

from tests.core import encrypted_jobs
from tests.support.workers import wait_until
from wurk_django.core import Client, encryption, keys
from wurk_django.core.api import DeadSet
from wurk_django.core.api.key_versions import KeyVersionScan
from wurk_django.core.payload import dumps, loads

pytestmark = pytest.mark.slow

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.2")
REQUIRE = "tests.core.encrypted_jobs"
SECRET = {"pan": "4111111111111111", "name": "Ada Lovelace"}
LEAKS = (b"4111111111111111", b"Lovelace")


@pytest.fixture
def keyring(tmp_path):
    """Three keys; the worker's folder holds versions 1 and 2 only, this process all."""
    ring = {version: os.urandom(32) for version in (1, 2, 3)}
    folder = tmp_path / "worker-keys"
    folder.mkdir()
    for version in (1, 2):
        (folder / f"key-{version}.bin").write_bytes(ring[version])
    encryption.enable(1, ring.get)
    yield ring, folder
    encryption.disable()


def start(start_worker, folder, active=1, *args):
    return start_worker(*FAST, *args, require=REQUIRE,
                        env={"WURK_TEST_KEY_DIR": str(folder),
                             "WURK_TEST_ACTIVE_KEY": str(active)})


def every_byte(redis_client) -> bytes:
    """Every key and value in Redis, whatever its type."""
    parts = []
    for key in redis_client.scan_iter():
        parts.append(key)
        kind = redis_client.type(key).decode()
        if kind == "list":
            parts += redis_client.lrange(key, 0, -1)
        elif kind == "zset":
            parts += redis_client.zrange(key, 0, -1)
        elif kind == "hash":
            parts += [b"%s=%s" % item for item in redis_client.hgetall(key).items()]
        elif kind == "set":
            parts += redis_client.smembers(key)
        elif kind == "string":
            parts.append(redis_client.get(key))
        elif kind == "stream":
            parts += [repr(entry).encode() for entry in redis_client.xrange(key)]
    return b"\n".join(parts)


def ran(redis_client) -> list[str]:
    return [entry.decode().split()[1] for entry in redis_client.lrange("test:ran", 0, -1)]


def test_no_byte_in_redis_holds_the_secret(config, keyring, start_worker, redis_client):
    _, folder = keyring
    queued = encrypted_jobs.Charge.perform_async(1, SECRET)
    encrypted_jobs.Charge.perform_in(3600, 2, SECRET)  # stays in `schedule`
    encrypted_jobs.Declined.perform_async(3, SECRET)   # fails: `retry`, with its message
    encrypted_jobs.DeclinedForGood.perform_async(4, SECRET)  # `dead`
    worker = start(start_worker, folder)
    wait_until(lambda: redis_client.zcard(keys.RETRY) == 1 and redis_client.zcard(keys.DEAD)
               == 1 and ran(redis_client) == [queued], 20, message="every job's outcome")
    assert redis_client.zcard(keys.SCHEDULE) == 1
    for _, key in ((1, keys.RETRY), (2, keys.DEAD)):
        [member] = redis_client.zrange(key, 0, -1)
        job = loads(member)
        assert job["error_message"] == "card [encrypted data] declined for [encrypted data]"
        assert job["args"][1]["__wurk_enc__"] is True
    everything = every_byte(redis_client)
    assert not [leak for leak in LEAKS if leak in everything]
    assert not [leak for leak in LEAKS if leak.decode() in worker.log()]
    # The job itself got the secret in plaintext.
    [entry] = redis_client.lrange("test:ran", 0, -1)
    assert entry.decode().split()[2] == encrypted_jobs.digest(SECRET)


def test_an_argument_that_cannot_be_decrypted_dies_at_once_and_runs_once_its_key_is_back(
        config, keyring, start_worker, redis_client):
    ring, folder = keyring
    client = Client(config)
    encryption.enable(3, ring.get)  # a key the worker does not have
    unknown_key = client.push({"class": encrypted_jobs.Charge, "args": [1, SECRET]})
    encryption.enable(1, ring.get)
    tampered = client.push({"class": encrypted_jobs.Charge, "args": [2, SECRET]})
    [raw] = [r for r in redis_client.lrange("queue:default", 0, -1) if loads(r)["jid"] == tampered]
    job = loads(raw)
    sealed = bytearray(base64.b64decode(job["args"][1]["ct"]))
    sealed[0] ^= 1
    job["args"][1]["ct"] = base64.b64encode(bytes(sealed)).decode()
    redis_client.lrem("queue:default", 1, raw)
    redis_client.lpush("queue:default", dumps(job))
    malformed = {"class": "tests.core.encrypted_jobs.Charge", "jid": "malformed0000000000000",
                 "queue": "default", "encrypt": True, "retry": True,
                 "args": [3, {"__wurk_enc__": True, "v": 1, "iv": "AAAA", "ct": "AAAA"}]}
    redis_client.lpush("queue:default", dumps(malformed))
    stored = {loads(r)["jid"]: loads(r)["args"] for r in redis_client.lrange("queue:default",
                                                                             0, -1)}
    start(start_worker, folder)
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 3, 20, message="three deaths")
    dead = {loads(m)["jid"]: loads(m) for m in redis_client.zrange(keys.DEAD, 0, -1)}
    assert set(dead) == {unknown_key, tampered, "malformed0000000000000"}
    for jid, job in dead.items():
        assert job["error_class"] == "encryption_error"
        assert job["args"] == stored[jid]  # untouched
        assert "retry_count" not in job  # never retried
    assert "no encryption key for version 3" in dead[unknown_key]["error_message"]
    assert "InvalidTag" in dead[tampered]["error_message"]
    assert "malformed envelope" in dead["malformed0000000000000"]["error_message"]
    assert redis_client.zcard(keys.RETRY) == 0 and ran(redis_client) == []
    # Restore the key and retry the job from the dead set: it runs.
    (folder / "key-3.bin").write_bytes(ring[3])
    [entry] = [e for e in DeadSet(config) if e.jid == unknown_key]
    entry.retry()
    wait_until(lambda: ran(redis_client) == [unknown_key], 20, message="the retried job")


def test_a_key_rotation_runs_the_jobs_of_both_keys(config, keyring, start_worker,
                                                   redis_client):
    ring, folder = keyring
    old = encrypted_jobs.Charge.perform_bulk([[n, SECRET] for n in range(5)])
    encryption.enable(2, ring.get)  # the switch: new pushes use key 2
    new = encrypted_jobs.Charge.perform_bulk([[n, SECRET] for n in range(5, 8)])
    assert dict(KeyVersionScan(config).run().counts) == {1: 5, 2: 3}
    start(start_worker, folder, 2)
    wait_until(lambda: len(ran(redis_client)) == 8, 20, message="every job")
    assert sorted(ran(redis_client)) == sorted(old + new)
    digests = {entry.decode().split()[2] for entry in redis_client.lrange("test:ran", 0, -1)}
    assert digests == {encrypted_jobs.digest(SECRET)}
    wait_until(lambda: not KeyVersionScan(config).run().counts, 10,
               message="no job left on either key")
    assert json.loads(json.dumps(dict(KeyVersionScan(config).run().counts))) == {}
