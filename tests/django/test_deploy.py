"""Deploy marks: one mark per label and minute, the git default label, the command."""

import io
import subprocess
from datetime import UTC, date, datetime

import pytest
from django.core.management import call_command

from wurk_django.core import deploy

AT = datetime(2025, 2, 14, 8, 43, 27, 500000, tzinfo=UTC)


def test_a_mark_is_floored_to_the_minute_and_kept_90_days(config, redis_client):
    assert deploy.mark("v1.4.2", at=AT, config=config) == "2025-02-14T08:43:00Z"
    assert redis_client.hgetall("20250214-marks") == {b"2025-02-14T08:43:00Z": b"v1.4.2"}
    assert 7_775_990 < redis_client.ttl("20250214-marks") <= 7_776_000
    assert redis_client.get("deploylock-v1.4.2") == b"2025-02-14T08:43:00Z"
    assert 0 < redis_client.ttl("deploylock-v1.4.2") <= 60


def test_the_same_label_within_a_minute_leaves_one_mark(config, redis_client):
    # A fleet's processes all call mark() at boot: only the first one writes.
    assert deploy.mark("v2", at=AT, config=config) is not None
    assert deploy.mark("v2", at=AT.replace(minute=44), config=config) is None
    assert deploy.fetch(date(2025, 2, 14), config) == {"2025-02-14T08:43:00Z": "v2"}


def test_hsetnx_keeps_the_first_label_of_a_minute(config, redis_client):
    deploy.mark("first", at=AT, config=config)
    deploy.mark("second", at=AT, config=config)
    assert deploy.fetch("2025-02-14", config) == {"2025-02-14T08:43:00Z": "first"}


def test_fetch_days_reads_several_days_oldest_first(config):
    deploy.mark("b", at=AT.replace(day=15), config=config)
    deploy.mark("a", at=AT, config=config)
    days = deploy.days_between(AT, AT.replace(day=16))
    assert days == [date(2025, 2, 14), date(2025, 2, 15), date(2025, 2, 16)]
    assert list(deploy.fetch_days(days, config).values()) == ["a", "b"]
    assert deploy.fetch(AT.replace(day=16), config) == {}


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                        "HOME": str(cwd), "PATH": "/usr/bin:/bin:/usr/local/bin"})


def test_the_default_label_is_the_last_commit(config, redis_client, tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "Ship the dashboard")
    monkeypatch.chdir(tmp_path)
    label = deploy.git_label()
    assert label.endswith(" Ship the dashboard") and len(label.split()[0]) >= 7
    assert deploy.mark(at=AT, config=config) == "2025-02-14T08:43:00Z"
    assert deploy.fetch(AT, config) == {"2025-02-14T08:43:00Z": label}


def test_no_label_and_no_git_is_a_no_op(config, redis_client, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert deploy.git_label() is None
    assert deploy.mark(at=AT, config=config) is None
    assert deploy.mark("", at=AT, config=config) is None
    assert redis_client.keys("*") == []


@pytest.mark.django_db
def test_the_command(redis_client):
    out = io.StringIO()
    call_command("wurk_deploy", "v9 <b>", stdout=out)
    assert out.getvalue().startswith("Deploy marked at ")
    [key] = redis_client.keys("*-marks")
    assert list(redis_client.hgetall(key).values()) == [b"v9 <b>"]
    out = io.StringIO()
    call_command("wurk_deploy", "v9 <b>", stdout=out)
    assert "No mark written" in out.getvalue()
