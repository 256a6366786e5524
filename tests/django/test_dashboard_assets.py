"""Cache-Control of the dashboard's bundle, shell and API: row by row.

The bundle is a fixture directory (WURK["DASHBOARD"]["BUNDLE_DIR"]), so these tests
never depend on the SPA build; row 19 also walks the real bundle when it is built.
"""

import email.utils
import gzip
import json
import os
from importlib.util import find_spec
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.contrib import admin
from django.test import AsyncClient, Client, override_settings
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import csrf_exempt
from whitenoise.base import WhiteNoise

from wurk_django.dashboard import assets, whitenoise_hooks
from wurk_django.dashboard.cache import (
    API,
    HASHED,
    SHELL,
    STABLE,
    cache_control_for,
    with_cache_control,
)
from wurk_django.dashboard.views_shell import shell

IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "public, no-cache"
STATIC = "/admin/wurk/static/"
HASHED_FILES = ["assets/wurk-AbCd1234.js", "assets/Chart-CnsZ1jie.css",
                "assets/inter-Xy_9-8Zq.woff2"]
STABLE_FILES = ["index.html", "favicon.svg", "manifest.webmanifest", ".vite/manifest.json"]
MANIFEST = {
    "src/main.tsx": {"file": "assets/wurk-AbCd1234.js", "isEntry": True, "src": "src/main.tsx",
                     "imports": ["_hooks-CApgekOi.js"], "css": ["assets/Chart-CnsZ1jie.css"],
                     "dynamicImports": ["src/pages/Busy.tsx"]},
    "_hooks-CApgekOi.js": {"file": "assets/hooks-CApgekOi.js",
                           "css": ["assets/hooks-Aa11Bb22.css"]},
    "src/pages/Busy.tsx": {"file": "assets/Busy-DerE7sfH.js", "isDynamicEntry": True},
}


def make_bundle(root: Path) -> Path:
    """A bundle shaped like Vite's output, with pre-compressed variants of one chunk."""
    files = {name: f"/* {name} */ " + "x" * 200 for name in HASHED_FILES}
    files.update({"assets/hooks-CApgekOi.js": "export const h = 1;",
                  "assets/hooks-Aa11Bb22.css": "body{}", "assets/Busy-DerE7sfH.js": "1",
                  "index.html": "<!doctype html>", "favicon.svg": "<svg/>",
                  "manifest.webmanifest": "{}", ".vite/manifest.json": json.dumps(MANIFEST)})
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    js = (root / HASHED_FILES[0]).read_bytes()
    (root / (HASHED_FILES[0] + ".gz")).write_bytes(gzip.compress(js))
    (root / (HASHED_FILES[0] + ".br")).write_bytes(b"brotli-bytes")  # smaller than gzip
    return root


@pytest.fixture(params=[True, False], ids=["debug", "nodebug"])
def bundle(request, tmp_path, settings):
    """The fixture bundle, served with DEBUG on (looked up per request) and off."""
    root = make_bundle(tmp_path / "wurk")
    settings.DEBUG = request.param
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(root)}}
    yield root
    assets.reset_caches()


@pytest.fixture(params=["sync", "async"])
def fetch(request):
    """fetch(method, url, user=None, **headers) -> (response, body), by either client."""
    kind = request.param

    def run(method, url, user=None, csrf=False, **headers):
        if kind == "sync":
            client = Client(enforce_csrf_checks=csrf)
            if user:
                client.force_login(user)
            response = client.generic(method, url, headers=headers)
            body = (b"".join(response.streaming_content) if response.streaming
                    else response.content)
            return response, body

        async def go():
            client = AsyncClient(enforce_csrf_checks=csrf)
            if user:
                await client.aforce_login(user)
            response = await client.generic(method, url, headers=headers)
            if response.streaming:
                return response, b"".join([chunk async for chunk in response.streaming_content])
            return response, response.content

        return async_to_sync(go)()
    run.kind = kind
    return run


def cache_controls(response) -> list[str]:
    return [value for name, value in response.items() if name.lower() == "cache-control"]


# --- the pure function ------------------------------------------------------------

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
STATUSES = [200, 204, 206, 301, 302, 304, 400, 403, 404, 405, 416, 500]
KINDS = {HASHED: IMMUTABLE, STABLE: NO_CACHE, SHELL: NO_CACHE, API: "no-store"}


CACHEABLE = [(method, status) for method in ("GET", "HEAD") for status in (200, 206, 304)]

# One test per rule, each walking every combination it covers (7 methods x 12 statuses
# x 4 kinds x with or without a value already set: 672 in all) and naming those it gets
# wrong: the rules are checked in full without counting as 672 tests.


def check_every(combinations, expected) -> None:
    wrong = [f"cache_control_for{args!r} = {got!r}, expected {want!r}"
             for args in combinations
             if (got := cache_control_for(*args)) != (want := expected(*args))]
    assert not wrong, f"{len(wrong)} of {len(combinations)} wrong:\n" + "\n".join(wrong)


def test_get_and_head_answered_200_206_or_304_get_their_kinds_value():
    combinations = [(method, status, kind, None) for method, status in CACHEABLE
                    for kind in KINDS]
    assert len(combinations) == 24
    check_every(combinations, lambda method, status, kind, _: KINDS[kind])


def test_every_other_method_and_status_gets_no_directive():
    combinations = [(method, status, kind, None) for method in METHODS for status in STATUSES
                    for kind in KINDS if (method, status) not in CACHEABLE]
    assert len(combinations) == 7 * 12 * 4 - 24
    check_every(combinations, lambda *_: None)


def test_a_value_already_set_is_never_replaced():
    combinations = [(method, status, kind, "private, max-age=5") for method in METHODS
                    for status in STATUSES for kind in KINDS]
    assert len(combinations) == 7 * 12 * 4
    check_every(combinations, lambda *_: None)


# --- rows 1-10: bundle files ------------------------------------------------------

@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("name", HASHED_FILES + STABLE_FILES)
def test_row_1_2_files_get_their_kind(bundle, fetch, method, name):
    response, body = fetch(method, STATIC + name)
    assert response.status_code == 200
    expected = IMMUTABLE if name.startswith("assets/") else NO_CACHE
    assert cache_controls(response) == [expected]
    assert response["ETag"] and response["Last-Modified"]
    assert response["Content-Length"] == str((bundle / name).stat().st_size)
    assert body == (b"" if method == "HEAD" else (bundle / name).read_bytes())


@pytest.mark.parametrize("name", [HASHED_FILES[1], "favicon.svg"])
def test_row_3_matching_etag_is_304_with_the_same_value(bundle, fetch, name):
    first, _ = fetch("GET", STATIC + name)
    response, body = fetch("GET", STATIC + name, If_None_Match=first["ETag"])
    assert response.status_code == 304 and body == b""
    assert cache_controls(response) == cache_controls(first)
    assert response["ETag"] == first["ETag"]


@pytest.mark.parametrize("name", [HASHED_FILES[1], "favicon.svg"])
def test_row_4_if_modified_since_is_304_with_the_same_value(bundle, fetch, name):
    mtime = os.stat(bundle / name).st_mtime
    since = email.utils.formatdate(mtime + 1, usegmt=True)
    response, _ = fetch("GET", STATIC + name, If_Modified_Since=since)
    assert response.status_code == 304
    assert cache_controls(response) == [IMMUTABLE if "assets/" in name else NO_CACHE]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("name", [HASHED_FILES[1], "index.html"])
def test_row_5_a_range_is_206_with_the_same_value(bundle, fetch, method, name):
    response, body = fetch(method, STATIC + name, Range="bytes=0-9")
    size = (bundle / name).stat().st_size
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 0-9/{size}"
    assert cache_controls(response) == [IMMUTABLE if "assets/" in name else NO_CACHE]
    assert body == (b"" if method == "HEAD" else (bundle / name).read_bytes()[:10])


@pytest.mark.parametrize("name", [HASHED_FILES[1], "index.html"])
def test_row_6_an_unsatisfiable_range_is_416_without_a_directive(bundle, fetch, name):
    response, _ = fetch("GET", STATIC + name, Range="bytes=999999999-")
    assert response.status_code == 416
    assert cache_controls(response) == []


@pytest.mark.parametrize("range_header", ["bytes=0-1,3-4", "items=0-1"])
def test_row_7_multi_or_foreign_ranges_are_ignored(bundle, fetch, range_header):
    response, body = fetch("GET", STATIC + HASHED_FILES[1], Range=range_header)
    assert response.status_code == 200 and body == (bundle / HASHED_FILES[1]).read_bytes()
    assert cache_controls(response) == [IMMUTABLE]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("name", [HASHED_FILES[0], "favicon.svg"])
def test_row_8_other_methods_are_405_without_a_directive(bundle, fetch, method, name):
    response, _ = fetch(method, STATIC + name, csrf=True)  # and no CSRF token
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert cache_controls(response) == []


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("name", ["assets/gone-AbCd1234.js", "robots.txt",
                                  "assets/../.vite/manifest.json", "assets/", "",
                                  "assets/wurk-AbCd1234.js.gz"])
def test_row_9_missing_files_are_404_without_a_directive(bundle, fetch, method, name):
    response, _ = fetch(method, STATIC + name)
    assert response.status_code == 404
    assert cache_controls(response) == []


@pytest.mark.parametrize("encoding, expected", [("br", "br"), ("gzip", "gzip"),
                                                ("gzip, deflate, br", "br")])
def test_row_10_precompressed_variants(bundle, fetch, encoding, expected):
    response, body = fetch("GET", STATIC + HASHED_FILES[0], Accept_Encoding=encoding)
    assert response.status_code == 200
    assert response["Content-Encoding"] == expected
    assert response["Vary"] == "Accept-Encoding"
    assert cache_controls(response) == [IMMUTABLE]
    suffix = ".br" if expected == "br" else ".gz"
    assert body == (bundle / (HASHED_FILES[0] + suffix)).read_bytes()


def test_row_19_every_fixture_file_has_exactly_one_value(bundle):
    walk_bundle(bundle)


def test_row_19_every_built_file_has_exactly_one_value(settings):
    root = Path(assets.__file__).resolve().parent.parent / "static" / "wurk"
    if not (root / ".vite" / "manifest.json").is_file():
        pytest.skip("the SPA bundle is not built in this checkout (make assets)")
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(root)}}
    try:
        walk_bundle(root)
    finally:
        assets.reset_caches()


def walk_bundle(root: Path) -> None:
    client = Client()
    names = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    served = [name for name in names
              if not (name.endswith((".gz", ".br")) and (root / name[:-3]).is_file())]
    assert served
    for name in served:
        response = client.get(STATIC + name)
        assert response.status_code == 200, name
        assert cache_controls(response) == [IMMUTABLE if name.startswith("assets/")
                                            else NO_CACHE], name
        assert b"".join(response.streaming_content) == (root / name).read_bytes()


# --- rows 11-15: the shell --------------------------------------------------------

@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", is_staff=True)


@pytest.fixture
def other_staff(django_user_model):
    return django_user_model.objects.create_user("other", is_staff=True,
                                                 first_name="Other")


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("url", ["/admin/wurk/", "/admin/wurk/retries",
                                 "/admin/wurk/queues/default"])
def test_row_11_the_shell_is_public_no_cache_and_the_same_for_everyone(
        bundle, fetch, staff, other_staff, method, url):
    first, first_body = fetch(method, url, user=staff)
    second, second_body = fetch(method, url, user=other_staff)
    for response in (first, second):
        assert response.status_code == 200
        assert cache_controls(response) == [NO_CACHE]
        assert "Cookie" in response["Vary"]
    assert first["ETag"] == second["ETag"]
    assert first_body == second_body
    if method == "GET":
        html = first_body.decode()
        assert "Other" not in html and "csrfmiddlewaretoken" not in html
        assert ">staff<" not in html and '"staff"' not in html
        assert f'src="{STATIC}assets/wurk-AbCd1234.js"' in html
        assert f'<link rel="modulepreload" href="{STATIC}assets/hooks-CApgekOi.js">' in html
        assert f'href="{STATIC}assets/Chart-CnsZ1jie.css"' in html
        assert f'href="{STATIC}assets/hooks-Aa11Bb22.css"' in html
        assert "Busy-DerE7sfH" not in html  # lazy chunks load on demand, not preloaded


@pytest.mark.django_db
def test_row_12_the_shell_answers_304_to_its_etag(bundle, fetch, staff):
    first, _ = fetch("GET", "/admin/wurk/", user=staff)
    response, body = fetch("GET", "/admin/wurk/", user=staff, If_None_Match=first["ETag"])
    assert response.status_code == 304 and body == b""
    assert cache_controls(response) == [NO_CACHE]
    assert response["ETag"] == first["ETag"]
    stale, _ = fetch("GET", "/admin/wurk/", user=staff, If_None_Match='"other"')
    assert stale.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["anonymous", "non-staff", "inactive"])
def test_row_13_login_redirect_without_a_directive(bundle, fetch, django_user_model, who):
    user = None
    if who != "anonymous":
        user = django_user_model.objects.create_user(who, is_staff=who == "inactive",
                                                     is_active=who != "inactive")
    response, _ = fetch("GET", "/admin/wurk/retries", user=user)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/admin/wurk/retries")
    assert cache_controls(response) == []


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
def test_row_14_other_methods_on_the_shell_are_405(bundle, fetch, staff, method):
    response, _ = fetch(method, "/admin/wurk/", user=staff, csrf=True)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert cache_controls(response) == []


host_shell = admin.site.admin_view(
    csrf_exempt(with_cache_control(SHELL)(cache_control(private=True, max_age=5)(
        shell.__wrapped__))), cacheable=True)
urlpatterns = [path("host/wurk/", host_shell),
               path("admin/wurk/", include("wurk_django.dashboard.urls")),
               path("admin/", admin.site.urls)]


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__)
def test_row_15_a_value_set_before_the_decorator_is_kept(bundle, staff):
    client = Client()
    client.force_login(staff)
    response = client.get("/host/wurk/")
    assert response.status_code == 200
    assert cache_controls(response) == ["private, max-age=5"]


@pytest.mark.django_db
def test_the_shell_hands_config_to_the_spa_and_sets_csp(bundle, staff):
    client = Client()
    client.force_login(staff)
    html = client.get("/admin/wurk/").content.decode()
    config = json.loads(html.split('<script id="wurk-config" type="application/json">')[1]
                        .split("</script>")[0])
    assert config["mount"] == "/admin/wurk/" and config["api"] == "/admin/wurk/api/"
    assert config["assets"] == STATIC and config["read_only"] is False
    assert config["user"] is None and config["can_change"] is None
    assert config["csrf_header"] == "X-CSRFTOKEN" and config["poll_default"] == 5
    response = client.get("/admin/wurk/")
    assert response["Content-Security-Policy"].startswith("default-src 'self'; script-src 'self'")
    assert '<div id="wurk-root">' in html and "<style" not in html


@pytest.mark.django_db
def test_django_6_csp_middleware_gets_a_per_view_override(bundle, staff, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE,
                           "django.middleware.csp.ContentSecurityPolicyMiddleware"]
    settings.SECURE_CSP = {"default-src": ["'none'"], "script-src": ["https://cdn.example"]}
    client = Client()
    client.force_login(staff)
    policy = client.get("/admin/wurk/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "cdn.example" not in policy
    assert "frame-ancestors 'self'" in policy and "img-src 'self' data:" in policy


if find_spec("django.middleware.csp") is None:
    # Django 5.2 has no CSP middleware to override: the shell sets the header itself,
    # which test_the_shell_hands_config_to_the_spa_and_sets_csp checks on both legs.
    del test_django_6_csp_middleware_gets_a_per_view_override


@pytest.mark.django_db
def test_without_a_bundle_the_shell_says_so(tmp_path, settings, staff):
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(tmp_path / "none")}}
    client = Client()
    client.force_login(staff)
    response = client.get("/admin/wurk/")
    assert response.status_code == 200 and cache_controls(response) == [NO_CACHE]
    html = response.content.decode()
    assert "bundle is missing" in html and "make assets" in html
    assert '<script type="module"' not in html
    assert client.get(STATIC + "favicon.svg").status_code == 404


# --- rows 16-17: the host serves the bundle from STATIC_URL -----------------------

def whitenoise_like_the_middleware(root: Path, add_headers, immutable_test) -> WhiteNoise:
    """WhiteNoiseMiddleware's defaults (max_age 60) with Wurk's exported hooks."""
    files = WhiteNoise(None, max_age=60, add_headers_function=add_headers,
                       immutable_file_test=immutable_test)
    files.add_files(str(root), prefix="/static/wurk/")
    return files


def headers_of(files: WhiteNoise, url: str) -> dict:
    return dict(files.files[url].get_response("GET", {}).headers)


def test_row_16_static_url_mode_keeps_the_hosts_value(tmp_path, settings):
    settings.STATIC_URL = "/static/"
    root = make_bundle(tmp_path / "wurk")

    def host_hook(headers, path, url):
        if url.endswith("favicon.svg"):
            headers["Cache-Control"] = "private, max-age=5"

    files = whitenoise_like_the_middleware(root, whitenoise_hooks.make_add_headers(host_hook),
                                           whitenoise_hooks.make_immutable_file_test())
    assert headers_of(files, "/static/wurk/favicon.svg")["Cache-Control"] == "private, max-age=5"
    assert headers_of(files, "/static/wurk/index.html")["Cache-Control"] == NO_CACHE
    assert headers_of(files, "/static/wurk/" + HASHED_FILES[0])["Cache-Control"] == IMMUTABLE


def test_row_17_static_url_mode_django_hashed_copies_are_immutable(tmp_path, settings):
    settings.STATIC_URL = "/static/"
    root = tmp_path / "wurk"
    (root / "assets").mkdir(parents=True)
    (root / "assets" / "Dashboard-cGKycyd0.0123456789ab.js").write_text("1")
    (root / "index.0123456789ab.html").write_text("2")
    files = whitenoise_like_the_middleware(root, whitenoise_hooks.add_headers,
                                           whitenoise_hooks.immutable_file_test)
    hashed = headers_of(files, "/static/wurk/assets/Dashboard-cGKycyd0.0123456789ab.js")
    assert hashed["Cache-Control"] == IMMUTABLE
    # Outside assets/ a Django-hashed name is still a stable file of the bundle.
    assert headers_of(files, "/static/wurk/index.0123456789ab.html")["Cache-Control"] == NO_CACHE
    test = whitenoise_hooks.immutable_file_test
    assert test("", "/static/admin/css/base.0123456789ab.css") is True  # the host's files
    assert test("", "/static/admin/css/base.css") is False
    by_regex = whitenoise_hooks.make_immutable_file_test(r"\.hashed\.")
    assert by_regex("", "/static/x.hashed.js") is True


# --- row 18: the API --------------------------------------------------------------

@pytest.mark.django_db
def test_row_18_api_no_store_on_200_and_nothing_on_errors(bundle, staff):
    client = Client()
    assert cache_controls(client.get("/admin/wurk/api/stats")) == []  # 401
    client.force_login(staff)
    assert cache_controls(client.get("/admin/wurk/api/stats")) == ["no-store"]
    assert cache_controls(client.head("/admin/wurk/api/stats")) == ["no-store"]
    assert cache_controls(client.get("/admin/wurk/api/nowhere")) == []  # 404
    assert cache_controls(client.post("/admin/wurk/api/stats")) == []  # 405
