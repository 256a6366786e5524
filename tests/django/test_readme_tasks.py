"""The README's django.tasks example, run as written: its settings block becomes a settings
module, its `yourapp/tasks.py` block an installed app, and its usage block runs in a
Django process against them; a real `wurk_worker` (no `-q`) then runs the task."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.workers import ROOT, wait_until, worker_env
from wurk_django.core import keys

pytestmark = pytest.mark.slow

USAGE = """
import django, json, sys
django.setup()
namespace = {}
exec(open(sys.argv[1]).read(), namespace)
print(json.dumps([namespace["result"].id, namespace["later"].id,
                  namespace["result"].status]))
"""


def readme_blocks() -> list[str]:
    """The Python blocks of the README's "Django's tasks API" section, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Django's tasks API", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.fixture
def readme_project(tmp_path) -> Path:
    settings_block, tasks_block, usage_block = readme_blocks()
    assert settings_block.startswith("# settings.py") and "TASKS = " in settings_block
    assert tasks_block.startswith("# yourapp/tasks.py")
    (tmp_path / "readme_settings.py").write_text(
        "from tests.settings import *  # noqa\n" + settings_block
        + '\nINSTALLED_APPS = [*INSTALLED_APPS, "yourapp"]\n')
    (tmp_path / "yourapp").mkdir()
    (tmp_path / "yourapp" / "__init__.py").write_text("")
    (tmp_path / "yourapp" / "tasks.py").write_text(tasks_block)
    (tmp_path / "usage.py").write_text(usage_block)
    return tmp_path


def test_the_readme_django_tasks_example_runs_on_a_worker(readme_project, redis_url,
                                                          redis_client, start_worker):
    env = {"DJANGO_SETTINGS_MODULE": "readme_settings",
           "PYTHONPATH": f"{readme_project}:{ROOT}", "WURK_REDIS_URL": redis_url}
    before = time.time()
    client = subprocess.run([sys.executable, "-c", USAGE, str(readme_project / "usage.py")],
                            cwd=ROOT, text=True, capture_output=True, timeout=60,
                            env=worker_env(redis_url, **env))
    assert client.returncode == 0, client.stderr
    jid, later_jid, status = json.loads(client.stdout)
    assert status == "READY"

    # The later one waits in the schedule, due five minutes after it was enqueued.
    (score,) = [score for member, score in redis_client.zrange(keys.SCHEDULE, 0, -1,
                                                               withscores=True)
                if json.loads(member)["jid"] == later_jid]
    assert before + 295 < score < time.time() + 305

    start_worker("-c", "2", require=None, env=env,
                 command=[sys.executable, str(ROOT / "manage.py"), "wurk_worker"])
    record = wait_until(lambda: _successful(redis_client, jid), 20, 0.05,
                        "the README's task to succeed on the worker")
    assert record["return_value"] == {"rows": 12} and record["queue_name"] == "reports"


def _successful(redis_client, jid: str) -> dict | None:
    raw = redis_client.get(keys.task_result(jid))
    record = json.loads(raw) if raw else None
    return record if record and record["status"] == "SUCCESSFUL" else None
