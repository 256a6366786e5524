"""The dashboard's permissions, held by an unmanaged model (no table is ever created)."""

from django.db import models


class Dashboard(models.Model):
    """Lists Wurk in the admin index and carries the dashboard's two permissions.

    `view_dashboard` opens the dashboard when WURK["DASHBOARD"]["REQUIRE_VIEW_PERMISSION"]
    is on (staff status alone suffices otherwise); `change_dashboard` allows actions.
    """

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("view_dashboard", "Can view the Wurk dashboard"),
                       ("change_dashboard", "Can act in the Wurk dashboard (retry, delete, "
                                            "pause, quiet...)")]
        verbose_name = "dashboard"
        verbose_name_plural = "dashboard"
