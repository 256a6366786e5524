"""The History page draws the leader's snapshots (history:metrics): throughput from the
running totals, the levels of the queues and sets, and the newest values."""

import time

import pytest

from tests.browser.conftest import sync_api
from wurk_django.core import keys

pytestmark = pytest.mark.slow


def seed(redis_client, count: int = 20, step_s: int = 30) -> None:
    now_ms = int(time.time() * 1000)
    for n in range(count):
        redis_client.xadd(keys.HISTORY_METRICS, {
            "processed": 1000 + 60 * n, "failures": 10 + n // 5, "enqueued": 40 - n,
            "retries": 3, "dead": 1, "scheduled": 2, "busy": n % 4},
            id=f"{now_ms - (count - 1 - n) * step_s * 1000}-0")


def test_the_history_page_charts_the_snapshots(dashboard, admin_user, redis_client):
    seed(redis_client)
    dashboard.login(admin_user)
    dashboard.page.get_by_role("link", name="History").click()
    page = dashboard.page
    page.wait_for_selector(".w-loading", state="detached")

    expect = sync_api.expect
    expect(page.get_by_role("img", name="Jobs processed and failed per minute, "
                                       "from the history snapshots")).to_be_visible()
    expect(page.locator(".w-chart canvas")).to_have_count(2)
    latest = page.get_by_label("Latest snapshot")
    expect(latest.locator("div", has_text="Enqueued").locator("dd")).to_have_text("21")
    expect(latest.locator("div", has_text="Dead").locator("dd")).to_have_text("1")
    page.get_by_role("button", name="24 hours").click()
    expect(page).to_have_url(dashboard.url("history?range=86400"))
    dashboard.screenshot("history")


def test_without_snapshots_the_page_says_how_to_turn_them_on(dashboard, admin_user):
    dashboard.login(admin_user)
    dashboard.open("history")
    sync_api.expect(dashboard.page.get_by_text('WURK["RETAIN_HISTORY"] = 30')).to_be_visible()
