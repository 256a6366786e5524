"""`manage.py wurk_bench`: a tiny run that also boots the example project's worker."""

import io
import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.slow


def test_the_command_times_the_example_projects_boot(redis_url, tmp_path):
    out, printed = tmp_path / "bench.json", io.StringIO()
    call_command("wurk_bench", "--redis-url", redis_url, "--sections", "boot", "--repeat", "1",
                 "--no-progress", "--json", str(out), stdout=printed)
    rows = {row["metric"]: row for row in json.loads(out.read_text())["rows"]}
    project = "example project (manage.py wurk_worker)"
    for metric in (f"boot to first job, {project}", f"idle RSS per worker process, {project}",
                   "boot to first job, core CLI"):
        assert rows[metric]["targets"]["wurk"]["median"] > 0
    assert "boot to first job, core CLI" in printed.getvalue()  # the table
