"""The web app's probes (wurk_django/probes.py): answered by ProbeMiddleware before any
other middleware (no session, no login, any Host header), liveness whatever Redis does,
readiness 503 for a Redis that is gone or frozen (SIGSTOP), bodies that name nothing,
and their settings' checks."""

import json
import signal

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client, override_settings

from tests.settings import MIDDLEWARE
from tests.support.redis_server import RedisServer, free_port

PROBES = {"LIVENESS_PATH": "/-/live", "READINESS_PATH": "/-/ready", "TIMEOUT": 0.5}
WITH_PROBES = {"MIDDLEWARE": ["wurk_django.probes.ProbeMiddleware", *MIDDLEWARE],
               "ALLOWED_HOSTS": ["testserver"]}
POD_IP = "10.42.0.17:8000"  # what a kubelet sends as Host; not in ALLOWED_HOSTS


def get(path: str, **headers):
    response = Client().get(path, HTTP_HOST=POD_IP, **headers)
    return response.status_code, json.loads(response.content), response


@pytest.fixture
def probes(monkeypatch):
    def use(url=None, **wurk):
        if url is not None:
            monkeypatch.setenv("WURK_REDIS_URL", url)
        return override_settings(WURK={"PROBES": PROBES, **wurk}, **WITH_PROBES)
    return use


def test_both_probes_answer_with_no_session_no_login_and_a_pods_host_header(probes):
    with probes():
        status, body, response = get("/-/live")
        assert (status, body) == (200, {"status": "ok"})
        assert response["Cache-Control"] == "no-store" and not response.cookies
        status, body, response = get("/-/ready")
        assert (status, body) == (200, {"status": "ready"})
        assert not response.cookies
        assert Client().get("/elsewhere", HTTP_HOST=POD_IP).status_code == 400  # Django's


def test_liveness_does_not_depend_on_redis_and_readiness_does(probes):
    gone = f"redis://127.0.0.1:{free_port()}/0"
    with probes(gone):
        assert get("/-/live")[:2] == (200, {"status": "ok"})
        assert get("/-/ready")[:2] == (503, {"status": "not ready",
                                             "reason": "redis unavailable"})


def test_a_frozen_redis_fails_readiness_within_the_timeout(probes):
    server = RedisServer().start()
    try:
        with probes(server.url):
            assert get("/-/ready")[0] == 200
            server.process.send_signal(signal.SIGSTOP)
            assert get("/-/ready")[:2] == (503, {"status": "not ready",
                                                 "reason": "redis unavailable"})
            assert get("/-/live")[0] == 200
            server.process.send_signal(signal.SIGCONT)
            assert get("/-/ready")[0] == 200
    finally:
        server.process.send_signal(signal.SIGCONT)
        server.cleanup()


def test_a_refused_password_says_so_without_the_password_the_host_or_the_version(probes):
    server = RedisServer().start()
    locker = redis.Redis(port=server.port)
    locker.config_set("requirepass", "right")
    locker.close()
    try:
        with probes(f"redis://:wrong-secret@127.0.0.1:{server.port}/0"):
            status, body, response = get("/-/ready")
    finally:
        server.cleanup()
    assert (status, body) == (503, {"status": "not ready", "reason": "redis unavailable"})
    text = response.content.decode()
    assert not any(word in text for word in ("wrong-secret", str(server.port), "127.0.0.1"))


def test_only_get_and_head_are_answered(probes):
    with probes():
        assert Client().head("/-/live", HTTP_HOST=POD_IP).status_code == 200
        response = Client().post("/-/ready", HTTP_HOST=POD_IP)
        assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


def test_the_views_can_be_routed_in_a_urlconf_too(settings):
    from django.test import RequestFactory

    from wurk_django import probes
    request = RequestFactory().get("/healthz")
    assert probes.liveness(request).status_code == 200
    assert probes.readiness(request).status_code == 200


def test_without_probes_settings_the_middleware_answers_nothing():
    with override_settings(WURK={}, **WITH_PROBES):
        assert Client().get("/-/live").status_code == 404


@pytest.mark.parametrize("value, text", [
    ({"LIVENESS_PATH": "live"}, "WURK['PROBES']['LIVENESS_PATH'] must be a path starting"),
    ({"TIMEOUT": 0}, "WURK['PROBES']['TIMEOUT'] must be a number of seconds above 0"),
    ({"READY": "/r"}, "WURK['PROBES'] must be a dict with LIVENESS_PATH"),
    ({"LIVENESS_PATH": "/p", "READINESS_PATH": "/p"}, "must differ"),
])
def test_bad_probe_settings_are_check_errors_naming_the_key(value, text):
    with override_settings(WURK={"PROBES": value}), \
            pytest.raises(SystemCheckError, match=r"wurk\.E004") as raised:
        call_command("check")
    assert text in str(raised.value)


def test_probe_paths_without_the_middleware_are_a_warning(capsys):
    with override_settings(WURK={"PROBES": PROBES}):
        call_command("check")
    assert "wurk.W003" in capsys.readouterr().err
