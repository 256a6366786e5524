# The unmanaged Dashboard model: no table, only its content type and two permissions.

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Dashboard",
            fields=[
                ("id", models.AutoField(auto_created=True, primary_key=True, serialize=False,
                                        verbose_name="ID")),
            ],
            options={
                "verbose_name": "dashboard",
                "verbose_name_plural": "dashboard",
                "permissions": [("view_dashboard", "Can view the Wurk dashboard"),
                                ("change_dashboard", "Can act in the Wurk dashboard (retry, "
                                                     "delete, pause, quiet...)")],
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
