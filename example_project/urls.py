from django.contrib import admin
from django.urls import include, path

# The dashboard's mount comes first: admin.site.urls would answer /admin/wurk/ itself.
urlpatterns = [path("admin/wurk/", include("wurk_django.dashboard.urls")),
               path("admin/", admin.site.urls)]
