"""Required by supervisor tests: forked children whose boot number (counted in Redis)
is listed in `WURK_TEST_BOOT_CRASHES` exit at once, before they register, as a child
whose boot cannot succeed would."""

import os

import redis


def _after_fork_in_child() -> None:
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    boots = client.incr("test:boots")
    client.close()
    if str(boots) in os.environ.get("WURK_TEST_BOOT_CRASHES", "").split(","):
        os._exit(3)


os.register_at_fork(after_in_child=_after_fork_in_child)
