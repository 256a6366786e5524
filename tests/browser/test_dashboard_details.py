"""Details only a real browser shows: what a page says, where things land on the screen,
which clicks ask first, and what the navigation offers."""

import json
import re
import time

import pytest

from tests.browser.conftest import sync_api
from tests.browser.test_dashboard import add_to_set, enqueue, failed_payload, job_payload

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

expect = sync_api.expect
ABSOLUTE_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
UTC = [{"timezone_id": "UTC"}]
NARROW = [{"viewport": {"width": 390, "height": 844}}]


def boxes_overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def test_the_job_page_shows_retry_options_with_the_policy_not_as_stray_rows(
        dashboard, admin_user, redis_client):
    add_to_set(redis_client, "retry", failed_payload(1, backtrace=10, shop_ref="A-17"),
               time.time() + 600)
    dashboard.login(admin_user)
    dashboard.open("retries")
    dashboard.page.locator("tbody a").first.click()
    job = dashboard.page.locator('table[data-table="job"]')
    job.wait_for()
    labels = [label.strip() for label in job.locator("th").all_inner_texts()]
    assert "backtrace" not in labels and "shop_ref" not in labels
    assert all(label[:1].isupper() for label in labels), labels
    policy = job.locator("tr", has=dashboard.page.locator("th", has_text="Retry policy"))
    expect(policy.locator("td")).to_have_text("true; keeps 10 backtrace lines")
    extra = dashboard.page.locator('[data-section="extra"]')
    expect(extra.locator("code")).to_have_text(["shop_ref"])
    dashboard.screenshot("job-detail-options")


@pytest.mark.parametrize("context_options", UTC, indirect=True)
def test_times_are_shown_once_when_this_browser_is_on_utc(dashboard, admin_user,
                                                          redis_client):
    add_to_set(redis_client, "retry", failed_payload(1), time.time() + 600)
    redis_client.sadd("periodic", "loop1")
    redis_client.hset("loops:loop1", mapping={
        "schedule": "*/5 * * * *", "klass": "app.Report", "tz": "Etc/UTC",
        "options": json.dumps({"queue": "default"}), "paused": "0",
        "lf": str(int(time.time()) - 120), "nf": str(int(time.time()) + 180)})
    dashboard.login(admin_user)
    dashboard.open("retries")
    dashboard.page.locator("tbody a").first.click()
    times = dashboard.page.locator('table[data-table="job"] .w-times')
    expect(times).to_have_count(4)  # next retry, created, enqueued, first failure
    for text in times.all_inner_texts():
        assert len(ABSOLUTE_TIME.findall(text)) == 1, text
    assert "(local)" not in dashboard.page.locator("main").inner_text()
    dashboard.screenshot("job-detail-utc-browser")
    dashboard.open("periodic")
    for cell in ("next", "last"):
        text = dashboard.page.locator(f'tr[data-loop="loop1"] td[data-cell="{cell}"]').inner_text()
        assert len(ABSOLUTE_TIME.findall(text)) == 1, text


def test_times_in_another_zone_show_both(dashboard, admin_user, redis_client):
    add_to_set(redis_client, "retry", failed_payload(1), time.time() + 600)
    dashboard.login(admin_user)
    dashboard.open("retries")
    dashboard.page.locator("tbody a").first.click()
    first = dashboard.page.locator('table[data-table="job"] .w-times').first
    expect(first).to_contain_text("(local)")
    assert len(ABSOLUTE_TIME.findall(first.inner_text())) == 2


def test_toasts_leave_the_last_rows_buttons_clear(dashboard, admin_user, redis_client):
    # Two entries that are not jobs: "Retry now" fails on each with a long error toast
    # (8 s), and the rows stay where they are.
    for n in range(2):
        redis_client.zadd("retry", {f"not a job {n}": time.time() + n})
    for n in range(16):
        add_to_set(redis_client, "retry", failed_payload(n), time.time() + 60 * (n + 1))
    dashboard.login(admin_user)
    dashboard.open("retries")
    page = dashboard.page
    rows = page.locator('table[data-table="jobs"] tbody tr')
    expect(rows).to_have_count(18)
    for n in range(2):
        rows.nth(n).locator('button[data-action="retry"]').click()
    toasts = page.locator(".w-toast-error")
    expect(toasts).to_have_count(2)
    last_buttons = rows.last.locator("button")
    last_buttons.last.scroll_into_view_if_needed()
    page.keyboard.press("End")
    expect(toasts).to_have_count(2)  # still shown while the layout is measured
    dashboard.screenshot("retries-toasts")
    for button in last_buttons.all():
        button.click(trial=True, timeout=2_000)  # nothing on top of it takes the click
        for toast in toasts.all():
            assert not boxes_overlap(button.bounding_box(), toast.bounding_box())


@pytest.mark.parametrize("context_options", NARROW, indirect=True)
def test_the_retries_table_fits_a_390_px_screen(dashboard, admin_user, redis_client):
    for n in range(3):
        add_to_set(redis_client, "retry", failed_payload(n, "a-long-argument-" * 4),
                   time.time() + 60 * (n + 1))
    dashboard.login(admin_user)
    dashboard.open("retries")
    page = dashboard.page
    rows = page.locator('table[data-table="jobs"] tbody tr')
    expect(rows).to_have_count(3)
    dashboard.screenshot("retries-390")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for row in rows.all():
        for part in row.locator("button, .w-error-cell, code.w-args").all():
            box = part.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (part.inner_text(), box)


def test_failures_are_counted_and_a_passed_retry_time_reads_due(dashboard, admin_user,
                                                                 redis_client):
    jid = add_to_set(redis_client, "retry", failed_payload(1, retry_count=0), time.time() - 7)
    dashboard.login(admin_user)
    dashboard.open("retries")
    row = dashboard.page.locator(f'tr[data-jid="{jid}"]')
    expect(row.locator('[data-cell="failures"]')).to_have_text("failed once")
    expect(row.locator('[data-cell="when"]')).to_have_text("due now")
    assert "ago" not in row.inner_text() and "retried 0" not in row.inner_text()
    row.locator("a").first.click()
    job = dashboard.page.locator('table[data-table="job"]')
    expect(job.locator("tr").first).to_contain_text("due now")
    expect(job).to_contain_text("failed once")


def test_deleting_or_killing_one_row_asks_first(dashboard, admin_user, redis_client):
    jids = [add_to_set(redis_client, "retry", failed_payload(n), time.time() + 60 * (n + 1))
            for n in range(2)]
    enqueue(redis_client, job_payload(9))
    dashboard.login(admin_user)
    dashboard.open("retries")
    page = dashboard.page
    dialog = page.locator("dialog[open]")
    page.locator(f'tr[data-jid="{jids[0]}"] button[data-action="delete"]').click()
    expect(dialog).to_contain_text("Delete")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    assert redis_client.zcard("retry") == 2
    page.locator(f'tr[data-jid="{jids[1]}"] button[data-action="kill"]').click()
    expect(dialog).to_contain_text("moves to Dead")
    dialog.get_by_role("button", name="Kill").click()
    page.locator(f'tr[data-jid="{jids[1]}"]').wait_for(state="detached")
    assert redis_client.zcard("dead") == 1
    dashboard.open("queues/default")
    page.locator('table[data-table="queue-jobs"] button[data-action="delete"]').click()
    expect(dialog).to_contain_text("Delete")
    dialog.get_by_role("button", name="Cancel").click()
    assert redis_client.llen("queue:default") == 1


def test_every_feature_of_this_version_is_offered(dashboard, admin_user):
    dashboard.login(admin_user)
    nav = dashboard.page.locator("nav.w-nav")
    for name in ("Periodic", "Batches", "Limiters"):
        expect(nav.get_by_role("link", name=name)).to_be_visible()
    dashboard.open("batches")
    expect(dashboard.page.locator("main")).to_contain_text("No batches yet")


def test_a_queue_key_of_the_wrong_type_is_one_row_with_a_note(dashboard, admin_user,
                                                              redis_client):
    enqueue(redis_client, job_payload(1))
    redis_client.sadd("queues", "w")
    redis_client.set("queue:w", "x")
    dashboard.login(admin_user)
    dashboard.open("queues")
    bad = dashboard.page.locator('tr[data-queue="w"]')
    expect(bad).to_contain_text("unknown")
    expect(bad.locator('[data-error="queue"]')).to_contain_text("string")
    expect(dashboard.page.locator('tr[data-queue="default"] td.w-num').first).to_have_text("1")
    expect(dashboard.page.locator('[data-stat="enqueued"] dd')).to_have_text("1")
    dashboard.screenshot("queues-wrong-type")


def test_the_queue_page_reads_only_its_own_queue(dashboard, admin_user, redis_client):
    enqueue(redis_client, job_payload(1, queue="low"))
    enqueue(redis_client, job_payload(2))
    dashboard.login(admin_user)
    asked: list[str] = []
    dashboard.page.on("request", lambda request: asked.append(request.url.split("?")[0]))
    dashboard.open("queues/low")
    expect(dashboard.page.locator('table[data-table="queue-jobs"] tbody tr')).to_have_count(1)
    expect(dashboard.page.locator("main .w-facts")).to_contain_text("1")
    api = dashboard.url("api/")
    assert api + "queues/low" in asked and api + "queues/low/jobs" in asked
    assert api + "queues" not in asked  # the list of every queue is not needed here
