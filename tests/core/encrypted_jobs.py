"""Encrypted tasks for tests/core/test_encryption*.py, run by real worker processes.

Keys are files `key-<version>.bin` in $WURK_TEST_KEY_DIR (a missing file: no such key),
and $WURK_TEST_ACTIVE_KEY is the version new pushes use. The tasks record a digest of
what they received, never the secret itself, so a test can read every byte in Redis."""

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.core.jobs import results
from wurk_django.core import Job, encryption
from wurk_django.core.registry import REGISTRY


def key_from_dir(version):
    path = Path(os.environ["WURK_TEST_KEY_DIR"]) / f"key-{version}.bin"
    return path.read_bytes() if path.exists() else None


if os.environ.get("WURK_TEST_KEY_DIR"):
    encryption.enable(int(os.environ.get("WURK_TEST_ACTIVE_KEY", "1")), key_from_dir)


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


class Charge(Job):
    wurk_options = {"encrypt": True}

    def perform(self, user_id, bag):
        results().rpush("test:ran", f"{user_id} {self.jid} {digest(bag)}")


class Declined(Job):
    """Fails with the secret in its message: what is stored must not hold it."""

    wurk_options = {"encrypt": True, "retry": 5}

    def perform(self, user_id, bag):
        results().rpush("test:attempts", self.jid)
        raise ValueError(f"card {bag['pan']} declined for {bag['name']}")


class DeclinedForGood(Declined):
    wurk_options = {"encrypt": True, "retry": 0}


TASKS = (Charge, Declined, DeclinedForGood)
if not os.environ.get("WURK_TEST_KEY_DIR"):
    # In the test process, registered only while a test asks (the fixture below): an
    # encrypt=True task in the registry makes `manage.py check` fail without keys, and
    # other tests run the checks with settings of their own.
    for _task in TASKS:
        REGISTRY.unregister(_task.wire_name)


@pytest.fixture
def encrypted_tasks():
    for task in TASKS:
        REGISTRY.register(task.wire_name, task)
    yield
    for task in TASKS:
        REGISTRY.unregister(task.wire_name)
