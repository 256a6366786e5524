"""Wurk's entry in the Django admin index: one row, "Dashboard", leading to the shell."""

from django.contrib import admin
from django.http import HttpResponseRedirect
from django.urls import path, reverse

from .dashboard.auth import can_view
from .models import Dashboard


@admin.register(Dashboard)
class DashboardAdmin(admin.ModelAdmin):
    """No change list: the model has no table, so every admin URL redirects to the shell."""

    def has_module_permission(self, request):
        return can_view(request.user)

    def has_view_permission(self, request, obj=None):
        return can_view(request.user)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [path("", self.admin_site.admin_view(self.redirect_to_shell),
                     name="{}_{}_changelist".format(*info))]

    def redirect_to_shell(self, request):
        return HttpResponseRedirect(reverse("wurk:shell"))
