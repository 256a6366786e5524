"""The Django app: wires the lazy config, autodiscovers task modules, registers checks."""

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class WurkConfig(AppConfig):
    name = "wurk_django"
    label = "wurk"
    verbose_name = "Wurk"
    default_auto_field = "django.db.models.AutoField"

    def ready(self):
        from . import checks  # noqa: F401  (registers the system checks)
        from .conf import build_config
        from .core.config import set_default_config_factory
        from .core.registry import DJANGO_IMPORT_HINT, REGISTRY

        # Settings are read on first use (a push, a worker), never here at start-up.
        set_default_config_factory(build_config)
        REGISTRY.import_hint = DJANGO_IMPORT_HINT
        autodiscover_modules("tasks")
        from .embedded import start_if_serving
        start_if_serving()  # WURK["EMBEDDED"]: only in web-serving processes, once
