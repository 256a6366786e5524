"""`manage.py wurk_worker` refuses bad settings and flags before it starts anything,
naming the WURK key or the flag at fault."""

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from wurk_django import conf
from wurk_django.core.config import set_default_config


@pytest.fixture(autouse=True)
def django_config():
    set_default_config(None)
    yield
    set_default_config(None)


@pytest.mark.timeout(60)  # before the fix, some of these started a worker that never ended
@pytest.mark.parametrize("wurk, flags, text", [
    ({"PROCESSES": "2"}, {}, "WURK['PROCESSES'] must be a whole number >= 1, 'auto' (one "
                             "per CPU) or a fraction rounded to the nearest count, got '2'"),
    ({"PROCESSES": 0}, {}, "WURK['PROCESSES'] must be a whole number >= 1, got 0"),
    ({"MAX_MEMORY_MB": 0}, {}, "WURK['MAX_MEMORY_MB'] must be > 0 (a number of megabytes)"),
    ({"LOG_FORMAT": "xml"}, {}, "WURK['LOG_FORMAT'] must be 'text' or 'json', got 'xml'"),
    ({"PROCESSES": 2}, {"processes": 0}, "--processes must be a whole number >= 1, got 0"),
    ({}, {"max_memory_mb": -1.0}, "--max-memory-mb must be > 0"),
    ({"CONCURRENCY": 4}, {"concurrency": 0}, "--concurrency must be a whole number >= 1"),
    ({}, {"queue": ["critical,x"]}, "--queue: queue entry 'critical,x'"),
    ({"CONCURRENCY": 0}, {}, "WURK['CONCURRENCY'] must be a whole number >= 1"),
])
def test_the_worker_refuses_a_bad_setting_or_flag_naming_it(wurk, flags, text):
    with override_settings(WURK=wurk):
        with pytest.raises(CommandError) as info:
            call_command("wurk_worker", **flags)
    assert str(info.value).startswith("wurk_worker: ") and text in str(info.value), info.value


def test_a_flag_wins_over_its_setting():
    with override_settings(WURK={"PROCESSES": 3, "LOG_FORMAT": "json"}):
        assert conf.process_options() == conf.ProcessOptions(processes=3, log_format="json")
        assert conf.process_options(processes=1, log_format="text").processes == 1
        assert conf.process_options(max_memory_mb=None).max_memory_mb is None
