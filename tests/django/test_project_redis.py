"""The project Redis from Django: `REDIS_URL = "embedded"` resolves to the project's own
redis-server, and `manage.py wurk_redis` starts, stops and shows it."""

import pytest
import redis
from django.core.management import call_command

from wurk_django import conf
from wurk_django.core import project_redis


@pytest.fixture
def project(settings, tmp_path):
    settings.BASE_DIR = tmp_path
    folder = project_redis.project_folder(tmp_path)
    yield folder
    project_redis.stop_server(folder)


def test_the_embedded_url_resolves_to_the_project_redis(project, monkeypatch):
    monkeypatch.setenv("WURK_REDIS_URL", "embedded")
    config = conf.build_config()
    assert config.redis_url == f"unix://{project.resolve()}/redis.sock"
    client = redis.Redis.from_url(config.redis_url)
    try:
        assert client.ping()
    finally:
        client.close()
    assert conf.build_config().redis_url == config.redis_url


def test_the_wurk_redis_command(project, capsys):
    call_command("wurk_redis", "status")
    assert "No project Redis is running" in capsys.readouterr().out
    call_command("wurk_redis", "start")
    out = capsys.readouterr().out
    assert "is running" in out and f"unix://{project.resolve()}/redis.sock" in out
    call_command("wurk_redis", "stop")
    assert "Stopped" in capsys.readouterr().out
    assert project_redis.server_status(project)["running"] is False
    call_command("wurk_redis", "stop")
    assert "No project Redis is running" in capsys.readouterr().out
