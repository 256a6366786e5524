"""The rate-limiter pages in a real browser: the list with each limiter's use against its
limit, its name and type filters and paging; one limiter's metrics and its reset."""

import pytest

from tests.browser.conftest import sync_api
from wurk_django.core.limiter import Limiter
from wurk_django.core.limiter_algorithms import SETTINGS

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

expect = sync_api.expect


@pytest.fixture
def limiters(config):
    SETTINGS.registered.clear()
    for n in range(30):
        Limiter.bucket(f"api-customer-{n:02}", 30, "minute").within_limit(lambda: None)
    stripe = Limiter.concurrent("stripe-acct_7", 3, wait_timeout=0)
    for _ in range(3):
        stripe.acquire().take()  # full: every slot held
    Limiter.leaky("github", 60, "minute").within_limit(lambda: None)
    yield stripe
    SETTINGS.registered.clear()


def test_the_list_shows_use_against_the_limit_and_filters_by_name_and_type(
        dashboard, admin_user, limiters):
    dashboard.login(admin_user)
    page = dashboard.page
    page.locator("nav.w-nav").get_by_role("link", name="Limiters").click()
    table = page.locator('table[data-table="limiters"]')
    expect(table.locator("tbody tr")).to_have_count(25)  # a page of 32
    expect(page.locator(".w-pager")).to_be_visible()
    page.locator('input[type="search"]').fill("stripe")
    page.get_by_role("button", name="Search").click()
    row = table.locator('tr[data-limiter="stripe-acct_7"]')
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(row.locator('[data-cell="usage"]')).to_contain_text("3 / 3")
    expect(row.locator(".w-bar-full")).to_have_count(1)  # at its limit
    page.get_by_role("button", name="Clear").click()
    page.get_by_label("Type").select_option("leaky")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator('tr[data-limiter="github"]')).to_contain_text("leaky")
    assert "type=leaky" in page.url
    dashboard.screenshot("limiters")


def test_a_limiters_page_shows_its_metrics_and_reset_asks_first(dashboard, admin_user,
                                                                 limiters, redis_client):
    dashboard.login(admin_user)
    dashboard.open("limiters?page=2")
    page = dashboard.page
    page.locator('tr[data-limiter="stripe-acct_7"] a').click()
    metrics = page.locator('[data-metrics="limiter"]')
    expect(metrics.locator('[data-metric="held"] dd')).to_have_text("3")
    expect(metrics.locator("[data-metric]")).to_have_count(8)
    expect(page.locator('[data-cell="usage"]')).to_contain_text("3 / 3")
    page.locator('button[data-action="reset"]').click()
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text("lose their slots")
    dialog.get_by_role("button", name="Cancel").click()
    assert redis_client.zcard("lmtr-cs:stripe-acct_7") == 3
    page.locator('button[data-action="reset"]').click()
    dialog.get_by_role("button", name="Reset").click()
    expect(page.locator('[data-cell="usage"]')).to_contain_text("0 / 3")
    assert redis_client.zcard("lmtr-cs:stripe-acct_7") == 0
    dashboard.screenshot("limiter")
