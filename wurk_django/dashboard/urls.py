"""Routes under the mount: `api/…`, `static/…` (the bundle), and the shell for the rest.

Include this BEFORE `admin.site.urls`, or the admin's app index for label `wurk`
answers `/admin/wurk/` (system check wurk.E202 catches that):

    path("admin/wurk/", include("wurk_django.dashboard.urls")),
    path("admin/", admin.site.urls),
"""

from django.urls import path, register_converter

from ..metrics_view import prometheus_metrics
from .api import (
    batches,
    limiters,
    metrics,
    overview,
    periodic,
    placeholders,
    processes,
    queues,
    sets,
    snapshots,
)
from .assets import serve_asset
from .auth import endpoint
from .views_shell import admin_redirect_view, shell_view


class QueueNameConverter:
    """Sidekiq 8's routable queue names, `^[a-z_:.\\-0-9]+$` case-insensitive; others 404."""

    regex = "[A-Za-z_:.0-9-]+"

    def to_python(self, value):
        return value

    def to_url(self, value):
        return value


register_converter(QueueNameConverter, "wurk_queue")

app_name = "wurk"


def _api_routes() -> list:
    routes = []
    for module in (overview, processes, queues, sets, metrics, periodic, limiters, batches,
                   placeholders, snapshots):
        entries = module.urls.items() if isinstance(module.urls, dict) else module.urls
        for route, view, *kwargs in entries:
            name = "api-meta" if route == "meta" else None
            routes.append(path("api/" + route, view, kwargs[0] if kwargs else None, name=name))
    # Anything else under api/ is a JSON 404 (after the 401 check), never the shell.
    routes.append(path("api/<path:rest>", endpoint(), name="api-not-found"))
    routes.append(path("api/", endpoint(), name="api-root"))
    return routes


urlpatterns = [
    *_api_routes(),
    *(path(route, view) for route, view in batches.status_urls.items()),
    path("static/<path:path>", serve_asset, name="asset"),
    path("static/", serve_asset, name="asset-root"),
    # Prometheus scrapes (token or IP allow-list; never the admin session). The SPA owns
    # `metrics`, its per-class page.
    path("prometheus", prometheus_metrics, name="prometheus"),
    path("", shell_view, name="shell"),
    # The admin index links Wurk to its change list, which this mount shadows.
    path("dashboard/", admin_redirect_view, name="admin-entry"),
    path("<path:path>", shell_view, name="shell-path"),
]
