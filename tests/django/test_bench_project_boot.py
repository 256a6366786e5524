"""The bench's boot section also times the example project's `manage.py wurk_worker`."""

import io
import json

import pytest

from benchmarks import cli

pytestmark = pytest.mark.slow


def test_the_boot_section_times_the_example_projects_boot(redis_url, tmp_path):
    out, printed = tmp_path / "bench.json", io.StringIO()
    parser = cli.argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--redis-url", redis_url, "--sections", "boot", "--repeat", "1",
                              "--no-progress", "--json", str(out)])
    assert cli.execute(args, out=printed) == 0, printed.getvalue()
    rows = {row["metric"]: row for row in json.loads(out.read_text())["rows"]}
    project = "example project (manage.py wurk_worker)"
    for metric in (f"boot to first job, {project}", f"idle RSS per worker process, {project}",
                   "boot to first job, core CLI"):
        assert rows[metric]["targets"]["wurk"]["median"] > 0
    assert f"boot to first job, {project}" in printed.getvalue()  # the table
