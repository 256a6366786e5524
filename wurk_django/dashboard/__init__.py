"""The dashboard at `/admin/wurk/`: the HTML shell, the JSON API and the bundle's files.

Mount it before the admin: `path("admin/wurk/", include("wurk_django.dashboard.urls"))`.
"""
