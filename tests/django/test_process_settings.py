"""WURK["PROCESSES"] = "auto" and fractions, and the environment variables Sidekiq's
swarm reads, in the order `manage.py wurk_worker` applies them: flag, setting, WURK_*,
SIDEKIQ_*."""

import pytest
from django.test import override_settings

from wurk_django import conf
from wurk_django.core.sizing import cpu_budget


@pytest.mark.parametrize("wurk, env, flags, expected", [
    ({"PROCESSES": "auto"}, {}, {}, (cpu_budget().processes, None)),
    ({"PROCESSES": 2.5}, {}, {}, (3, None)),
    ({}, {"WURK_COUNT": "3", "SIDEKIQ_COUNT": "4"}, {}, (3, None)),
    ({}, {"SIDEKIQ_COUNT": "4", "SIDEKIQ_MAXMEM_MB": "512"}, {}, (4, 512.0)),
    ({"PROCESSES": 2, "MAX_MEMORY_MB": 100}, {"WURK_COUNT": "5", "WURK_MAXMEM_MB": "900"}, {},
     (2, 100)),
    ({"PROCESSES": 2}, {"WURK_COUNT": "5"}, {"processes": "auto"}, (cpu_budget().processes,
                                                                     None)),
    ({}, {"WURK_MAXMEM_MB": "0"}, {}, (1, None)),  # 0: no cap
])
def test_flag_then_setting_then_environment(monkeypatch, wurk, env, flags, expected):
    for name in ("WURK_COUNT", "SIDEKIQ_COUNT", "WURK_MAXMEM_MB", "SIDEKIQ_MAXMEM_MB"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with override_settings(WURK=wurk):
        options = conf.process_options(**flags)
    assert (options.processes, options.max_memory_mb) == expected


def test_a_bad_variable_is_a_setting_error_naming_it(monkeypatch):
    monkeypatch.setenv("SIDEKIQ_COUNT", "two")
    with override_settings(WURK={}), \
            pytest.raises(conf.SettingError, match=r"^\$SIDEKIQ_COUNT must be a whole number"):
        conf.process_options()
