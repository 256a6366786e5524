"""The batch pages in a real browser: the list (paged, filtered by description and tag,
a progress bar per batch), a batch's page (progress, failures linked to the retry and
dead sets, callbacks and whether each fired, parent and children, invalidate and delete
behind a confirmation), and the dead batches."""

import pytest

from tests.browser.conftest import sync_api
from tests.django.test_dashboard_api_batches import die, fail, make, succeed
from wurk_django.core import Batch, BatchStatus, keys
from wurk_django.core import Client as JobClient

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

expect = sync_api.expect


@pytest.fixture
def batches(config):
    for n in range(27):
        batch, (first, _) = make(f"Daily report {n:02}", 2)
        if n % 3 == 0:
            succeed(config, batch.bid, first)
    billing, (failing, dying) = make("Invoices for May", 2, tags=["billing"])
    fail(config, billing.bid, failing)
    fail(config, billing.bid, dying)
    die(config, billing.bid, dying)
    with Batch(description="Nightly import", tags=["billing"]) as parent:
        JobClient().push({"class": "shop.tasks.load", "args": [1]})
        with Batch(description="Import shard 1") as child:
            JobClient().push({"class": "shop.tasks.load", "args": [2]})
    return {"billing": billing, "failing": failing, "dying": dying, "parent": parent,
            "child": child}


def test_the_list_pages_filters_and_shows_progress(dashboard, admin_user, batches):
    dashboard.login(admin_user)
    page = dashboard.page
    page.locator("nav.w-nav").get_by_role("link", name="Batches").click()
    table = page.locator('table[data-table="batches"]')
    expect(table.locator("tbody tr")).to_have_count(25)  # a page of 30, newest first
    expect(table.locator("tbody tr").first).to_contain_text("Import shard 1")
    expect(page.locator(".w-pager")).to_be_visible()
    page.locator('input[type="search"]').fill("daily report 03")
    page.get_by_role("button", name="Search").click()
    row = table.locator("tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator('[data-cell="progress"]')).to_contain_text("1 / 2")
    page.get_by_role("button", name="Clear").click()
    expect(table.locator("tbody tr")).to_have_count(25)
    table.locator(f'tr[data-batch="{batches["billing"].bid}"] a.w-badge').click()
    expect(page.locator('[data-filter="tag"]')).to_contain_text("billing")
    expect(table.locator("tbody tr")).to_have_count(2)
    assert "tag=billing" in page.url
    dashboard.screenshot("batches")


def test_a_batch_page_shows_its_progress_failures_callbacks_and_family(
        dashboard, admin_user, batches, redis_client):
    dashboard.login(admin_user)
    billing = batches["billing"]
    dashboard.open(f"batches/{billing.bid}")
    page = dashboard.page
    facts = page.locator('[data-facts="batch"]')
    expect(facts.locator('[data-fact="total"] dd')).to_have_text("2")
    expect(facts.locator('[data-fact="failures"] dd')).to_have_text("1")
    callbacks = page.locator('table[data-table="callbacks"]')
    expect(callbacks.locator('tr[data-callback="death"] [data-fired="true"]')).to_have_count(1)
    expect(callbacks.locator('tr[data-callback="success"] [data-fired="false"]')).to_have_count(1)
    expect(page.locator('[data-section="dead"]')).to_contain_text(batches["dying"])
    page.locator('[data-section="failed"]').get_by_role("link", name=batches["failing"]).click()
    page.wait_for_url(f"**/retries?q={batches['failing']}")
    dashboard.screenshot("batch-failing-link")

    dashboard.open(f"batches/{batches['parent'].bid}")
    children = page.locator('[data-section="children"]')
    expect(children).to_contain_text("1 not complete")
    children.get_by_role("link", name="Import shard 1").click()
    expect(page.locator('[data-cell="parent"]')).to_contain_text("Nightly import")
    page.locator('[data-cell="parent"] a').click()
    page.locator('button[data-action="invalidate"]').click()
    dialog = page.locator("dialog[open]")
    expect(dialog).to_contain_text("skipped")
    dialog.get_by_role("button", name="Invalidate").click()
    expect(page.locator(".w-detail [data-state]")).to_contain_text("invalidated")
    assert BatchStatus(batches["child"].bid).invalidated
    dashboard.screenshot("batch")
    page.locator('button[data-action="delete"]').click()
    page.locator("dialog[open]").get_by_role("button", name="Delete").click()
    page.wait_for_url("**/batches")
    assert not redis_client.exists(keys.batch(batches["parent"].bid))


def test_the_dead_batches_page_lists_a_batch_with_a_dead_job(dashboard, admin_user, batches):
    dashboard.login(admin_user)
    dashboard.open("batches")
    page = dashboard.page
    page.get_by_role("link", name="Dead batches").click()
    table = page.locator('table[data-table="batches"]')
    expect(table.locator("tbody tr")).to_have_count(1)
    row = table.locator(f'tr[data-batch="{batches["billing"].bid}"]')
    expect(row.locator("[data-state]")).to_contain_text("dead")
    row.get_by_role("link", name="Invoices for May").click()
    dead = page.locator('[data-section="dead"]')
    dead.get_by_role("link", name=batches["dying"]).click()
    page.wait_for_url(f"**/dead?q={batches['dying']}")
    dashboard.screenshot("dead-batches")
