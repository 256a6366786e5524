"""The Prometheus endpoint under the dashboard's mount: off by default, opened by a bearer
token or an IP allow-list (both, when both are set), never by the admin session; its
answer read with prometheus_client's own parser."""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from tests.django.dashboard_helpers import users_fixture  # noqa: F401
from wurk_django.core import Client as JobClient
from wurk_django.core import keys

pytestmark = pytest.mark.django_db

URL = "/admin/wurk/prometheus"
TOKEN = "s3cret-scrape-token-0123456789"


def values(response) -> dict:
    found = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_the_endpoint_is_off_until_a_token_or_networks_are_set(users):
    admin = Client()
    admin.force_login(users["superuser"])
    assert Client().get(URL).status_code == 404
    assert admin.get(URL).status_code == 404  # the session opens nothing


@override_settings(WURK={"METRICS": {"TOKEN": TOKEN}})
def test_a_bearer_token_opens_it_and_the_admin_session_does_not(users, redis_client):
    JobClient().push({"class": "Charge", "args": [1], "transactional": False})
    redis_client.set(keys.STAT_PROCESSED, 42)
    admin = Client()
    admin.force_login(users["superuser"])

    assert Client().get(URL).status_code == 401
    assert admin.get(URL).status_code == 401
    wrong = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}x"})
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Bearer")
    assert Client().get(URL, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    found = values(response)
    assert found[("wurk_queue_size", (("queue", "default"),))] == 1
    assert found[("wurk_processed_total", ())] == 42


@override_settings(WURK={"METRICS": {"TOKEN": TOKEN}})
def test_openmetrics_is_served_to_a_scraper_that_asks_for_it():
    response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}",
                                          "Accept": "application/openmetrics-text; "
                                                    "version=1.0.0"})
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


@override_settings(WURK={"METRICS": {"ALLOW_IPS": ["10.0.0.0/8", "::1"]}})
def test_an_allow_list_admits_its_networks_only():
    assert Client(REMOTE_ADDR="10.1.2.3").get(URL).status_code == 200
    assert Client(REMOTE_ADDR="::1").get(URL).status_code == 200
    assert Client(REMOTE_ADDR="192.168.1.9").get(URL).status_code == 403
    # A forwarded-for header is the client's own claim, never trusted.
    spoofed = Client(REMOTE_ADDR="192.168.1.9", HTTP_X_FORWARDED_FOR="10.0.0.1").get(URL)
    assert spoofed.status_code == 403


@override_settings(WURK={"METRICS": {"ALLOW_IPS": ["127.0.0.1"], "TOKEN": TOKEN}})
def test_with_both_set_a_scrape_needs_both():
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert Client(REMOTE_ADDR="127.0.0.1").get(URL).status_code == 401
    assert Client(REMOTE_ADDR="10.0.0.7").get(URL, headers=bearer).status_code == 403
    assert Client(REMOTE_ADDR="127.0.0.1").get(URL, headers=bearer).status_code == 200
    assert Client(REMOTE_ADDR="127.0.0.1").post(URL, headers=bearer).status_code == 405


@override_settings(WURK={"METRICS": {"TOKEN": TOKEN}, "REDIS_URL": "redis://127.0.0.1:9/0"})
def test_an_unreachable_redis_fails_the_scrape_instead_of_reporting_zeros(monkeypatch):
    from wurk_django.core.config import set_default_config
    monkeypatch.delenv("WURK_REDIS_URL")
    set_default_config(None)
    try:
        response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        set_default_config(None)
    assert response.status_code == 503 and b"Redis cannot be read" in response.content


@pytest.mark.parametrize("metrics, text", [
    ({"TOKEN": "short"}, "WURK['METRICS']['TOKEN'] must be a string of at least 16"),
    ({"ALLOW_IPS": "10.0.0.0/8"}, "WURK['METRICS']['ALLOW_IPS'] must be a list"),
    ({"ALLOW_IPS": ["10.0.0.300"]}, "WURK['METRICS']['ALLOW_IPS']: '10.0.0.300'"),
    ({"TOKENS": TOKEN}, "WURK['METRICS'] must be a dict with 'TOKEN' and/or 'ALLOW_IPS'"),
])
def test_manage_py_check_names_a_bad_metrics_setting(metrics, text):
    with override_settings(WURK={"METRICS": metrics}):
        with pytest.raises(SystemCheckError) as info:
            call_command("check")
        assert text in str(info.value)
        assert Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 500
