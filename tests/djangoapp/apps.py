from django.apps import AppConfig


class DjangoAppConfig(AppConfig):
    name = "tests.djangoapp"
    label = "djangoapp"
    default_auto_field = "django.db.models.AutoField"
