"""The dashboard's rate-limiter endpoints: the list (paged, filtered by name and type, use
against the limit), one limiter with its metrics, reset under the permission and
read-only rules; reading never registers a limiter or writes anything."""

import pytest

from tests.django.dashboard_helpers import (
    Api,
    ok,
    problem_of,
    redis_snapshot,
    users_fixture,  # noqa: F401
)
from wurk_django.core import keys
from wurk_django.core.limiter import Limiter
from wurk_django.core.limiter_algorithms import SETTINGS

pytestmark = pytest.mark.django_db


@pytest.fixture
def limiters(config, redis_client):
    """Limiters of every type, as their first calls register them, some in use."""
    SETTINGS.registered.clear()
    for n in range(30):
        Limiter.bucket(f"api-customer-{n:02}", 30, "minute").within_limit(lambda: None)
    stripe = Limiter.concurrent("stripe-acct_7", 3, wait_timeout=0)
    held = [stripe.acquire(), stripe.acquire()]
    for handle in held:
        handle.take()
    Limiter.window("erp", 5, 60).within_limit(lambda: None)
    Limiter.leaky("github", 60, "minute").within_limit(lambda: None)
    with Limiter.points("shopify", 1000, 0.001).acquire(estimate=200) as handle:
        handle.points_used(120)
    yield
    SETTINGS.registered.clear()


def test_the_list_is_paged_sorted_by_name_with_use_against_the_limit(limiters, users):
    body = ok(Api(users["viewer"]).get("limiters", count=10))
    assert body["total"] == 34 and body["pages"] == 4 and len(body["items"]) == 10
    assert [item["name"] for item in body["items"]][:2] == ["api-customer-00",
                                                            "api-customer-01"]
    last = ok(Api(users["viewer"]).get("limiters", count=10, page=4))["items"]
    by_name = {item["name"]: item for item in last}
    assert sorted(by_name) == ["erp", "github", "shopify", "stripe-acct_7"]
    stripe = by_name["stripe-acct_7"]
    assert (stripe["type"], stripe["used"], stripe["limit"], stripe["available"]) == \
        ("concurrent", 2, 3, 1)
    assert by_name["erp"]["used"] == 1 and by_name["erp"]["limit"] == 5
    assert 119 < by_name["shopify"]["used"] < 121 and by_name["shopify"]["limit"] == 1000
    assert stripe["options"]["size"] == "3"


def test_the_list_filters_by_name_and_by_type(limiters, users):
    api = Api(users["viewer"])
    found = ok(api.get("limiters", q="CUSTOMER-1"))
    assert found["total"] == 10 and all("customer-1" in i["name"] for i in found["items"])
    kinds = ok(api.get("limiters", type="concurrent"))
    assert [item["name"] for item in kinds["items"]] == ["stripe-acct_7"]
    assert ok(api.get("limiters", q="stripe", type="bucket"))["total"] == 0
    problem_of(api.get("limiters", type="throttle"), 400, "invalid_request")


def test_one_limiter_shows_its_metrics(limiters, users):
    body = ok(Api(users["viewer"]).get("limiters/stripe-acct_7"))
    assert body["used"] == 2 and body["limit"] == 3
    assert body["metrics"]["held"] == 2 and body["metrics"]["immediate"] == 2
    assert set(body["metrics"]) == {"held", "held_time_s", "immediate", "waited",
                                    "wait_time_s", "overages", "reclaimed", "reschedules"}
    assert 7_776_000 - 10 < body["ttl_s"] <= 7_776_000
    problem_of(Api(users["viewer"]).get("limiters/nobody"), 404, "not_found")


def test_reading_the_limiter_pages_writes_nothing_and_registers_nothing(limiters, users,
                                                                         redis_client):
    Limiter.concurrent("built-never-called", 5)
    before = redis_snapshot(redis_client)
    api = Api(users["superuser"])
    ok(api.get("limiters"))
    ok(api.get("limiters", q="api", type="bucket", page=2, count=5))
    for name in ("stripe-acct_7", "erp", "github", "shopify", "api-customer-03"):
        ok(api.get(f"limiters/{name}"))
    problem_of(api.get("limiters/built-never-called"), 404, "not_found")
    assert redis_snapshot(redis_client) == before


def test_reset_clears_a_limiters_state_for_those_who_may_change(limiters, users,
                                                                 redis_client):
    problem_of(Api(users["viewer"]).post("limiters/stripe-acct_7/reset"), 403, "forbidden")
    assert redis_client.zcard(keys.limiter_concurrent("stripe-acct_7")) == 2
    body = ok(Api(users["changer"]).post("limiters/stripe-acct_7/reset"))
    assert body["name"] == "stripe-acct_7" and body["done"] == 1
    assert redis_client.zcard(keys.limiter_concurrent("stripe-acct_7")) == 0
    detail = ok(Api(users["viewer"]).get("limiters/stripe-acct_7"))
    assert detail["used"] == 0 and detail["metrics"]["held"] == 0
    problem_of(Api(users["changer"]).post("limiters/nobody/reset"), 404, "not_found")


def test_read_only_mode_refuses_a_reset(limiters, users, settings, redis_client):
    settings.WURK = {**settings.WURK, "DASHBOARD": {"READ_ONLY": True}}
    before = redis_snapshot(redis_client)
    problem_of(Api(users["superuser"]).post("limiters/stripe-acct_7/reset"), 403, "read_only")
    assert redis_snapshot(redis_client) == before


def test_a_name_whose_meta_expired_is_left_out(limiters, users, redis_client):
    redis_client.delete(keys.limiter("erp"))
    names = [item["name"] for item in ok(Api(users["viewer"]).get("limiters", q="erp"))["items"]]
    assert names == []
    problem_of(Api(users["viewer"]).get("limiters/erp"), 404, "not_found")


def test_a_limiter_written_by_another_version_is_listed_without_its_state(users,
                                                                          redis_client,
                                                                          config):
    redis_client.sadd(keys.LIMITER_LIST, "ruby-made")
    redis_client.hset(keys.limiter("ruby-made"), mapping={"type": "throttle",
                                                          "options": "{\"rate\":3}"})
    redis_client.set(keys.limiter_concurrent("stripe-bad"), "not a zset")
    redis_client.sadd(keys.LIMITER_LIST, "stripe-bad")
    redis_client.hset(keys.limiter("stripe-bad"), mapping={
        "type": "concurrent", "options": "{\"size\":2,\"lock_timeout\":30}"})
    items = {i["name"]: i for i in ok(Api(users["viewer"]).get("limiters"))["items"]}
    assert items["ruby-made"]["known"] is False and items["ruby-made"]["used"] is None
    assert items["stripe-bad"]["used"] is None and items["stripe-bad"]["limit"] == 2
