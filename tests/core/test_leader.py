"""Leader election: the atomic campaign and release, fencing tokens, the cached check,
opting out, and a real hand-over between two electors."""

import time

import pytest

from tests.support.redis_server import free_port
from tests.support.workers import wait_until
from wurk_django.core import ConfigurationError, keys
from wurk_django.core.config import Config
from wurk_django.core.leader import Leader, LeaderCheck, opted_out
from wurk_django.core.redis import RedisConnection, connection_for


class Clock:
    """A hand-driven monotonic clock for the cache window."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fast(config):
    return config.replace(leader_ttl_s=2, leader_renew_s=0.2, leader_retry_s=0.2)


def elector(config, name: str, **kwargs) -> Leader:
    return Leader(config, connection_for(config), f"host:{name}:abcdef012345", enabled=True,
                  **kwargs)


def test_the_first_campaign_takes_the_lock_with_its_ttl_and_a_token(fast, redis_client):
    leader = elector(fast, "1")
    assert leader.campaign() is True
    assert redis_client.get(keys.LEADER) == b"host:1:abcdef012345"
    assert 0 < redis_client.pttl(keys.LEADER) <= 2000
    assert leader.held and leader.token == 1
    assert redis_client.get(keys.LEADER_TOKEN) == b"1"


def test_renewal_extends_the_lock_and_keeps_the_token(fast, redis_client):
    leader = elector(fast, "1")
    leader.campaign()
    redis_client.pexpire(keys.LEADER, 300)
    assert leader.campaign() is True
    assert redis_client.pttl(keys.LEADER) > 300
    assert leader.token == 1 and redis_client.get(keys.LEADER_TOKEN) == b"1"


def test_a_follower_cannot_take_a_held_lock(fast, redis_client):
    first, second = elector(fast, "1"), elector(fast, "2")
    assert first.campaign() is True
    assert second.campaign() is False
    assert not second.held and second.token is None
    assert redis_client.get(keys.LEADER) == b"host:1:abcdef012345"


def test_every_gain_increments_the_fencing_token(fast, redis_client):
    first, second = elector(fast, "1"), elector(fast, "2")
    gains = []
    first.on_gain(lambda: gains.append("first"))
    second.on_gain(lambda: gains.append("second"))
    first.campaign()
    assert first.release() is True
    assert second.campaign() is True and second.token == 2
    redis_client.delete(keys.LEADER)  # the lock lapsed: whoever takes it starts a new term
    assert first.campaign() is True and first.token == 3
    assert second.campaign() is False and second.token is None
    assert gains == ["first", "second", "first"]


def test_a_lapsed_lock_retaken_by_the_same_process_is_a_new_term(fast, redis_client):
    leader = elector(fast, "1")
    gains = []
    leader.on_gain(lambda: gains.append(leader.token))
    leader.campaign()
    redis_client.delete(keys.LEADER)
    leader.campaign()
    assert gains == [1, 2]


def test_only_the_owner_releases(fast, redis_client):
    first, second = elector(fast, "1"), elector(fast, "2")
    first.campaign()
    assert second.release() is False
    assert redis_client.get(keys.LEADER) == b"host:1:abcdef012345"
    assert first.release() is True
    assert redis_client.get(keys.LEADER) is None and not first.held


def test_a_failing_gain_hook_is_reported_not_raised(fast):
    reported = []
    fast.error_handlers.append(lambda exc, ctx, cfg: reported.append(ctx["context"]))
    leader = elector(fast, "1")
    leader.on_gain(lambda: 1 / 0)
    assert leader.campaign() is True
    assert reported == ["leader election"]


def test_the_check_reads_redis_and_caches_for_five_seconds(fast, redis_client):
    clock = Clock()
    leader = elector(fast, "1")
    check = LeaderCheck(leader, clock=clock)
    assert check() is False
    redis_client.set(keys.LEADER, leader.identity)
    assert check() is False  # cached
    clock.now += 4.9
    assert check() is False
    clock.now += 0.2
    assert check() is True
    redis_client.set(keys.LEADER, "someone:else:000000000000")
    clock.now += 4.9
    assert check() is True  # stale, by design: the cron claim makes this harmless
    clock.now += 0.2
    assert check() is False


def test_a_change_seen_by_the_elector_voids_the_cache(fast, redis_client):
    clock = Clock()
    leader = elector(fast, "1")
    check = leader.check()
    check._clock = clock
    assert check() is False
    leader.campaign()
    assert check() is True  # no 5 s wait for our own gain
    leader.release()
    assert check() is False


def test_a_redis_error_reads_as_not_leader(fast):
    down = fast.replace(redis_url=f"redis://127.0.0.1:{free_port()}/0", network_timeout_s=0.5)
    reported = []
    down.error_handlers.append(lambda exc, ctx, cfg: reported.append(ctx["context"]))
    connection = RedisConnection(down.redis_url, pool_size=2, socket_timeout_s=0.5)
    leader = Leader(down, connection, "host:1:abcdef012345", enabled=True)
    try:
        assert leader.check()() is False
        assert leader.campaign() is False  # reported, state unchanged
        assert reported == ["leader election"]
    finally:
        connection.close()


@pytest.mark.parametrize("environ,out", [
    ({}, False), ({"WURK_LEADER": "false"}, True), ({"WURK_LEADER": "FALSE"}, True),
    ({"SIDEKIQ_LEADER": "False"}, True), ({"WURK_LEADER": "true"}, False),
    ({"WURK_LEADER": "0"}, False),
])
def test_opting_out_by_environment(environ, out):
    assert opted_out(environ) is out


def test_an_opted_out_process_never_campaigns(fast, redis_client, monkeypatch):
    monkeypatch.setenv("WURK_LEADER", "false")
    leader = Leader(fast, connection_for(fast), "host:1:abcdef012345")
    assert not leader.enabled
    assert leader.start() is False
    assert leader.campaign() is False
    redis_client.set(keys.LEADER, leader.identity)
    assert leader.check()() is False
    assert redis_client.get(keys.LEADER_TOKEN) is None


def test_the_thread_leads_renews_and_hands_over_at_stop(fast, redis_client):
    first, second = elector(fast, "1"), elector(fast, "2")
    first.start()
    try:
        wait_until(lambda: first.held, 5, message="the first elector to lead")
        second.start()
        token = first.token
        # Renewals every 0.2 s keep a 2 s lock alive past its TTL: watch it for one and a
        # half TTLs. Without renewals it lapses at 2 s and the follower (retrying every
        # 0.2 s) takes it with the next token, so every sample must still show ours.
        taken_at = time.monotonic()

        def lock_outlived_its_ttl() -> bool:
            pipe = redis_client.pipeline(transaction=True)  # one atomic read of all three
            held = pipe.get(keys.LEADER).get(keys.LEADER_TOKEN).pttl(keys.LEADER).execute()
            assert held[:2] == [first.identity.encode(), str(token).encode()] and held[2] > 0, \
                f"the lock lapsed or changed hands while the leader ran: {held}"
            return time.monotonic() - taken_at > 1.5 * fast.leader_ttl_s

        wait_until(lock_outlived_its_ttl, 10, 0.05, "the lock to outlive its TTL")
        assert first.held and first.token == token and not second.held
        assert first.stop() is True
        assert redis_client.get(keys.LEADER) != first.identity.encode()
        wait_until(lambda: second.held, 5, message="the follower to take over")
        assert second.token == token + 1
    finally:
        first.stop()
        second.stop()
    assert redis_client.get(keys.LEADER) is None


def test_timings_are_checked():
    with pytest.raises(ConfigurationError, match="leader_renew_s"):
        Config(leader_ttl_s=10, leader_renew_s=10)
    with pytest.raises(ConfigurationError, match="leader_retry_s"):
        Config(leader_retry_s=0)
    with pytest.raises(ConfigurationError, match="cron_tick_s"):
        Config(cron_tick_s=-1)
