"""The dashboard as an operator uses it, in headless Chromium against the real API."""

import json
import os
import re
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.browser.conftest import ROOT, make_user, sync_api
from tests.support.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)>"
FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")


def job_payload(*args, klass="tests.core.jobs.record", queue="default", **fields) -> str:
    now_ms = int(time.time() * 1000)
    job = {"class": klass, "args": list(args), "queue": queue, "jid": uuid.uuid4().hex[:24],
           "retry": True, "created_at": now_ms - 60_000, "enqueued_at": now_ms - 50_000}
    job.update(fields)
    return json.dumps(job)


def failed_payload(*args, **fields) -> str:
    fields = {"error_class": "ValueError", "error_message": "card declined",
              "failed_at": int(time.time() * 1000) - 40_000, "retry_count": 3, **fields}
    return job_payload(*args, **fields)


def add_to_set(redis_client, name: str, payload: str, score: float | None = None) -> str:
    """ZADD a payload to `retry`, `schedule` or `dead`; returns its jid."""
    redis_client.zadd(name, {payload: score if score is not None else time.time()})
    return json.loads(payload)["jid"]


def enqueue(redis_client, payload: str) -> None:
    queue = json.loads(payload)["queue"]
    redis_client.sadd("queues", queue)
    redis_client.lpush(f"queue:{queue}", payload)


def seed_history(redis_client, config, days: int = 30) -> str:
    """Daily counters for the last `days` days and one deploy mark; returns its label."""
    from wurk_django.core import deploy

    today = datetime.now(UTC).date()
    for n in range(days):
        day = (today - timedelta(days=n)).isoformat()
        processed = 4000 + 60 * ((n * 7) % 23) - 30 * n - (2500 if n == 0 else 0)
        redis_client.set(f"stat:processed:{day}", processed)
        redis_client.set(f"stat:failed:{day}", 20 + (n * 13) % 40)
    label = "v1.4.2 (a1b2c3d)"
    deploy.mark(label, at=datetime.now(UTC) - timedelta(days=4), config=config)
    return label


def test_processed_count_rises_while_a_worker_runs(dashboard, admin_user, start_worker,
                                                   config, redis_client, console):
    from tests.core.jobs import record

    label = seed_history(redis_client, config)
    dashboard.login(admin_user)
    dashboard.page.locator(".w-marks", has_text=label).wait_for()
    assert dashboard.stat("processed") == 0
    start_worker("-c", "2", "-q", "default", *FAST)
    for n in range(30):
        record.perform_async(n)
    # The top bar polls api/stats every 2 s (the interval the context stored).
    wait_until(lambda: dashboard.stat("processed") >= 30, timeout_s=30,
               message="the processed count to reach 30 in the top bar")
    assert dashboard.stat("failed") == 0
    # More work, one burst per poll, so the realtime chart has a shape to draw: each
    # burst waits until the top bar has counted the one before.
    done = 30
    for burst in (12, 25, 6):
        for n in range(burst):
            record.perform_async(n)
        done += burst
        wait_until(lambda done=done: dashboard.stat("processed") >= done, timeout_s=30,
                   message=f"the processed count to reach {done}")
    dashboard.page.get_by_text("Collecting:").wait_for(state="detached")
    # The realtime chart draws the differences between polls on a canvas.
    assert dashboard.page.locator(".w-chart canvas").count() >= 2
    dashboard.screenshot("overview")
    if os.environ.get("WURK_DOCS_SCREENSHOT"):
        dashboard.screenshot("overview", ROOT / "docs" / "overview.png")
    assert console.dialogs == []


def test_retrying_a_dead_job_takes_it_off_the_dead_page(dashboard, admin_user, redis_client):
    jid = add_to_set(redis_client, "dead", failed_payload(7, 500))
    dashboard.login(admin_user)
    dashboard.open("dead")
    row = dashboard.page.locator(f'tr[data-jid="{jid}"]')
    row.wait_for()
    dashboard.screenshot("dead")
    row.locator('button[data-action="retry"]').click()
    row.wait_for(state="detached")
    dashboard.page.get_by_text("No dead job").wait_for()
    assert redis_client.zcard("dead") == 0
    pushed = json.loads(redis_client.lindex("queue:default", 0))
    assert pushed["jid"] == jid
    assert pushed["retry_count"] == 2  # a manual retry costs no budget


def test_pause_and_resume_a_queue(dashboard, admin_user, redis_client):
    enqueue(redis_client, job_payload(1))
    dashboard.login(admin_user)
    dashboard.open("queues")
    row = dashboard.page.locator('tr[data-queue="default"]')
    row.get_by_role("button", name="Pause").click()
    row.locator(".w-badge", has_text="paused").wait_for()
    assert redis_client.sismember("paused", "default")
    dashboard.screenshot("queues")
    row.get_by_role("button", name="Resume").click()
    row.locator(".w-badge", has_text="paused").wait_for(state="detached")
    assert not redis_client.sismember("paused", "default")


def test_html_in_arguments_is_shown_as_text_and_never_runs(dashboard, admin_user,
                                                          redis_client, console):
    add_to_set(redis_client, "retry", failed_payload(XSS, error_message=XSS), time.time() + 600)
    dashboard.login(admin_user)
    dashboard.open("retries")
    main = dashboard.page.locator("main")
    main.locator("code.w-args", has_text=XSS).wait_for()
    assert main.get_by_text(XSS).first.is_visible()
    dashboard.page.locator("tbody a").first.click()
    dashboard.page.locator("pre", has_text=XSS).first.wait_for()
    dashboard.screenshot("job-detail")
    assert main.locator("img").count() == 0
    assert console.dialogs == []


def test_bulk_kill_then_delete_all_with_the_count_confirmed(dashboard, admin_user,
                                                           redis_client):
    jids = [add_to_set(redis_client, "retry", failed_payload(n), time.time() + 60 * (n + 1))
            for n in range(4)]
    dashboard.login(admin_user)
    dashboard.open("retries")
    page = dashboard.page
    for jid in jids[:2]:
        page.locator(f'tr[data-jid="{jid}"] input[type=checkbox]').check()
    page.locator('button[data-bulk-action="kill"]').click()
    dialog = page.locator("dialog[open]")
    assert "2 jobs" in dialog.inner_text()
    dialog.get_by_role("button", name="Kill").click()
    page.locator(f'tr[data-jid="{jids[0]}"]').wait_for(state="detached")
    assert redis_client.zcard("dead") == 2
    page.locator('button[data-all-action="delete"]').click()
    assert "2 jobs" in dialog.inner_text()
    dashboard.screenshot("retries-confirm-all")
    dialog.get_by_role("button", name="Cancel").click()
    assert redis_client.zcard("retry") == 2
    page.locator('button[data-all-action="delete"]').click()
    dialog.get_by_role("button", name=re.compile(r"Delete all \(2\)")).click()
    page.get_by_text("No job is waiting for a retry").wait_for()
    assert redis_client.zcard("retry") == 0


def test_read_only_mode_hides_every_change(dashboard, admin_user, redis_client, settings):
    settings.WURK = {**settings.WURK, "DASHBOARD": {"READ_ONLY": True}}
    add_to_set(redis_client, "dead", failed_payload(1))
    enqueue(redis_client, job_payload(2))
    dashboard.login(admin_user)
    page = dashboard.page
    assert page.locator('[data-banner="read-only"]').is_visible()
    dashboard.open("dead")
    page.locator("tbody tr").first.wait_for()
    dashboard.screenshot("dead-read-only")
    assert page.locator("main button[data-action], main button[data-all-action]").count() == 0
    assert page.locator("main input[type=checkbox]").count() == 0
    dashboard.open("queues")
    page.locator('tr[data-queue="default"]').wait_for()
    assert page.get_by_role("button", name=re.compile("Pause|Clear")).count() == 0


def test_staff_without_change_permission_sees_no_buttons(dashboard, django_user_model,
                                                         redis_client):
    viewer = make_user(django_user_model, "viewer")
    add_to_set(redis_client, "dead", failed_payload(1))
    dashboard.login(viewer)
    assert dashboard.page.locator('[data-banner="no-permission"]').is_visible()
    dashboard.open("dead")
    dashboard.page.locator("tbody tr").first.wait_for()
    assert dashboard.page.locator("main button[data-action]").count() == 0


def test_periodic_job_pause_resume_and_run_now(dashboard, admin_user, redis_client):
    # No worker here: a leader's cron engine would drop a loop that no code declares.
    redis_client.sadd("periodic", "loop1")
    redis_client.hset("loops:loop1", mapping={
        "schedule": "*/5 * * * *", "klass": "tests.core.jobs.record", "tz": "Europe/Paris",
        "options": json.dumps({"queue": "default", "args": [1]}), "paused": "0",
        "lf": str(int(time.time()) - 120), "nf": str(int(time.time()) + 180)})
    dashboard.login(admin_user)
    dashboard.open("periodic")
    row = dashboard.page.locator('tr[data-loop="loop1"]')
    row.get_by_role("button", name="Pause").click()
    row.locator(".w-badge", has_text="paused").wait_for()
    assert redis_client.hget("loops:loop1", "paused") == b"1"
    row.get_by_role("button", name="Resume").click()
    row.locator(".w-badge", has_text="paused").wait_for(state="detached")
    dashboard.screenshot("periodic")
    last_run = row.locator('td[data-cell="last"]')
    assert "2 min" in last_run.inner_text()
    before_s = int(time.time())
    row.get_by_role("button", name="Run now").click()
    wait_until(lambda: redis_client.llen("queue:default") == 1, message="the loop's job")
    assert json.loads(redis_client.lindex("queue:default", 0))["args"] == [1]
    # The manual run is the loop's last run now, on the page as in Redis.
    sync_api.expect(last_run).to_contain_text(re.compile(r"\bnow\b|\b\d(\.\d)? s ago"))
    assert int(redis_client.hget("loops:loop1", "lf")) >= before_s
    row.get_by_role("link", name="tests.core.jobs.record").click()
    dashboard.page.locator("main h1", has_text="tests.core.jobs.record").wait_for()
    dashboard.screenshot("periodic-loop")


def test_every_page_renders(dashboard, admin_user, redis_client, start_worker, config):
    """Each page with data in it, for the screenshots; deep links open directly."""
    from tests.core.jobs import record

    start_worker("-c", "2", "-q", "default", *FAST)
    for n in range(5):
        record.perform_async(n)
    enqueue(redis_client, job_payload(3, queue="low"))
    add_to_set(redis_client, "retry", failed_payload(1), time.time() + 300)
    add_to_set(redis_client, "schedule", job_payload(2), time.time() + 3600)
    add_to_set(redis_client, "dead", failed_payload(3))
    dashboard.login(admin_user)
    wait_until(lambda: dashboard.stat("processed") >= 5, timeout_s=30,
               message="the worker to process the jobs")
    pages = {
        "busy": "Busy", "queues/low": "Queue low", "scheduled": "Scheduled",
        "retries": "Retries", "metrics": "Metrics",
        "metrics/tests.core.jobs.record": "tests.core.jobs.record",
        "": "Overview", "retries?sort=desc&q=ValueError": "Retries",
    }
    for path, heading in pages.items():
        dashboard.open(path)
        dashboard.page.locator("main h1", has_text=heading).wait_for()
        name = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "overview-with-worker"
        dashboard.screenshot(name)
    dashboard.open("busy")
    dashboard.page.locator('table[data-table="processes"] tbody tr').first.wait_for()
