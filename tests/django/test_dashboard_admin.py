"""The dashboard inside the Django admin: index entry, permissions model, and the checks."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.core import checks
from django.test import Client, override_settings
from django.urls import include, path

from wurk_django.dashboard import assets

pytestmark = pytest.mark.django_db


def dashboard_checks():
    return [m for m in checks.run_checks(tags=["wurk_dashboard"]) if m.id.startswith("wurk.")]


def test_the_model_carries_two_permissions_and_no_table():
    from wurk_django.models import Dashboard
    assert Dashboard._meta.managed is False
    assert sorted(Permission.objects.filter(content_type__app_label="wurk")
                  .values_list("codename", flat=True)) == ["change_dashboard", "view_dashboard"]


def test_the_admin_index_lists_wurk_and_its_entry_leads_to_the_shell(django_user_model):
    staff = django_user_model.objects.create_user("staff", is_staff=True)
    client = Client()
    client.force_login(staff)
    index = client.get("/admin/").content.decode()
    assert "Wurk" in index and 'href="/admin/wurk/dashboard/"' in index
    response = client.get("/admin/wurk/dashboard/")
    assert response.status_code == 302 and response["Location"] == "/admin/wurk/"
    outsider = Client()
    outsider.force_login(django_user_model.objects.create_user("outsider"))
    assert outsider.get("/admin/wurk/dashboard/")["Location"].startswith("/admin/login/")


def test_required_view_permission_hides_the_entry(django_user_model, settings):
    settings.WURK = {**settings.WURK, "DASHBOARD": {"REQUIRE_VIEW_PERMISSION": True}}
    client = Client()
    client.force_login(django_user_model.objects.create_user("staff", is_staff=True))
    assert 'href="/admin/wurk/dashboard/"' not in client.get("/admin/").content.decode()
    assert client.get("/admin/wurk/").status_code == 403


def test_a_correct_mount_passes_and_a_built_bundle_is_found(tmp_path, settings):
    (tmp_path / ".vite").mkdir()
    (tmp_path / ".vite" / "manifest.json").write_text("{}")
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(tmp_path)}}
    assert dashboard_checks() == []
    assets.reset_caches()


admin_first = [path("admin/", admin.site.urls),
               path("admin/wurk/", include("wurk_django.dashboard.urls"))]
not_included = [path("admin/", admin.site.urls)]


class AdminFirst:
    urlpatterns = admin_first


class NotIncluded:
    urlpatterns = not_included


@pytest.mark.parametrize("urlconf, expected", [(AdminFirst, ["wurk.E202"]),
                                               (NotIncluded, ["wurk.W202"])])
def test_the_mount_check(urlconf, expected, tmp_path, settings):
    (tmp_path / "manifest.json").write_text("{}")
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(tmp_path)}}
    with override_settings(ROOT_URLCONF=urlconf):
        messages = dashboard_checks()
    assert [m.id for m in messages] == expected and all(m.hint for m in messages)
    if expected == ["wurk.E202"]:
        assert "before" in messages[0].hint.lower()


@pytest.mark.parametrize("debug, expected", [(True, "wurk.W203"), (False, "wurk.E203")])
def test_a_missing_bundle(tmp_path, settings, debug, expected):
    settings.DEBUG = debug
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(tmp_path)}}
    assert [m.id for m in dashboard_checks()] == [expected]


@pytest.mark.parametrize("dashboard", [{"READ_ONLY": True, "NOPE": 1}, {"POLL_INTERVAL": 7},
                                       "yes"])
def test_bad_dashboard_settings(settings, dashboard):
    settings.WURK = {**settings.WURK, "DASHBOARD": dashboard}
    assert [m.id for m in dashboard_checks()] == ["wurk.E201"]


def test_without_a_urlconf_there_is_no_mount_to_check(tmp_path, settings):
    # A worker-only settings module has no ROOT_URLCONF: no dashboard to mount or serve,
    # so neither the mount nor the bundle (an empty folder here) is reported.
    del settings.ROOT_URLCONF
    settings.WURK = {**settings.WURK, "DASHBOARD": {"BUNDLE_DIR": str(tmp_path)}}
    assert dashboard_checks() == []
