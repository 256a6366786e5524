"""System checks for the dashboard: its settings, its mount, and the built bundle."""

from django.conf import settings as django_settings
from django.core.checks import Error, Warning
from django.urls import NoReverseMatch, Resolver404, resolve, reverse

from .. import conf
from ..core.errors import ConfigurationError

INCLUDE_HINT = ('In your root URLconf, put path("admin/wurk/", include('
                '"wurk_django.dashboard.urls")) BEFORE path("admin/", admin.site.urls).')


def dashboard_problems() -> list:
    try:
        settings = conf.dashboard_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), hint="See the Dashboard section of Wurk's README.",
                      id="wurk.E201")]
    if not getattr(django_settings, "ROOT_URLCONF", None):
        # A worker-only settings module serves no pages: there is no dashboard to mount,
        # and reverse() would fail on the missing setting itself.
        return []
    return _check_mount() + _check_bundle(settings)


def _check_mount() -> list:
    """Resolve the mount: another view there (the admin's app index) is an error."""
    try:
        mount = reverse("wurk:shell")
    except NoReverseMatch:
        return [Warning("The Wurk dashboard's URLs are not included, so /admin/wurk/ "
                        "shows no dashboard.", hint=INCLUDE_HINT, id="wurk.W202")]
    for url, marker in ((mount, "wurk_shell"), (mount + "api/meta", None)):
        try:
            match = resolve(url)
        except Resolver404:
            match = None
        ours = match is not None and (getattr(match.func, marker, False) if marker
                                      else match.url_name == "api-meta")
        if not ours:
            found = match._func_path if match is not None else "nothing"
            return [Error(f"{url} resolves to {found}, not the Wurk dashboard.",
                          hint=INCLUDE_HINT, id="wurk.E202")]
    return []


def _check_bundle(settings) -> list:
    from .assets import load_manifest
    if load_manifest(settings) is not None:
        return []
    message = (f"The dashboard bundle has no Vite manifest in {settings.bundle_dir} "
               f"(.vite/manifest.json or manifest.json); the dashboard page will be empty.")
    hint = "Reinstall Wurk, or run `make assets` in a source checkout."
    if settings.debug:
        return [Warning(message, hint=hint, id="wurk.W203")]
    return [Error(message, hint=hint, id="wurk.E203")]
