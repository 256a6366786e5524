"""`api/snapshots`: the history stream of the last hour to three days, as rows of numbers
in the order of `fields`, for staff only."""

import time

import pytest
from django.test import override_settings

from tests.django.dashboard_helpers import Api, problem_of, users_fixture  # noqa: F401
from wurk_django.core import keys
from wurk_django.core.config import set_default_config

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_config():
    set_default_config(None)
    yield
    set_default_config(None)


def test_rows_follow_the_fields_and_the_range_keeps_the_recent_ones(users, redis_client):
    now_ms = int(time.time() * 1000)
    redis_client.xadd(keys.HISTORY_METRICS, {"processed": 1}, id=f"{now_ms - 7_200_000}-0")
    redis_client.xadd(keys.HISTORY_METRICS, {"processed": 5, "failures": 1, "busy": 2,
                                             "enqueued": "n/a"}, id=f"{now_ms - 60_000}-0")

    with override_settings(WURK={"RETAIN_HISTORY": 30}):
        body = Api(users["viewer"]).get("snapshots", range=3600).json()
    assert body["interval_s"] == 30 and body["range_s"] == 3600
    assert body["fields"] == ["processed", "failures", "enqueued", "retries", "dead",
                              "scheduled", "busy"]
    assert body["items"] == [[now_ms - 60_000, 5, 1, None, None, None, None, 2]]
    set_default_config(None)  # built again from the settings, now without RETAIN_HISTORY
    wider = Api(users["viewer"]).get("snapshots", range=21600).json()
    assert [row[1] for row in wider["items"]] == [1, 5] and wider["interval_s"] is None


def test_a_range_not_offered_is_refused_and_strangers_are_not_let_in(users):
    problem_of(Api(users["viewer"]).get("snapshots", range=60), 400, "invalid_request")
    problem_of(Api().get("snapshots"), 401, "unauthenticated")
    problem_of(Api(users["outsider"]).get("snapshots"), 403, "forbidden")
