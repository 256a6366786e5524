"""The README's batch and workflow examples, run as written: their modules become a
package a real worker loads, their functions are called here, and the worker's output
shows every job and callback ran, in order."""

import re
import sys

import pytest

from tests.support.workers import ROOT, wait_until

pytestmark = pytest.mark.slow


def readme_blocks() -> dict[str, str]:
    """`path -> code` of the Python blocks in the README's batches section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Batches and workflows", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return {block.splitlines()[0].removeprefix("# "): block for block in blocks}


@pytest.fixture
def yourapp(tmp_path, monkeypatch):
    blocks = readme_blocks()
    assert sorted(blocks) == ["yourapp/imports.py", "yourapp/reports.py"]
    (tmp_path / "yourapp").mkdir()
    (tmp_path / "yourapp" / "__init__.py").write_text("from . import imports, reports\n")
    for path, code in blocks.items():
        (tmp_path / path).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("yourapp")]:
        del sys.modules[name]


def test_the_readme_batch_and_workflow_examples_run_on_a_worker(config, yourapp,
                                                               start_worker):
    from yourapp import imports, reports
    imports.start_import(42, [1, 2, 3])
    workflow = reports.build_report(7, 3)
    worker = start_worker("-c", "5", "--poll-interval", "0.5", require="yourapp",
                          env={"PYTHONPATH": f"{yourapp}:{ROOT}"})
    wait_until(lambda: "report 7 is out" in worker.log()
               and "import of account 42 done: 3 rows" in worker.log(), 60,
               message="both examples' callbacks")
    log = worker.log()
    for row in (1, 2, 3):
        assert log.index(f"row {row} of account 42") < log.index("import of account 42 done")
    pages = [log.index(f"report 7: page {page} fetched") for page in range(3)]
    assert max(pages) < log.index("report 7: pages merged") < log.index(
        "report 7: published") < log.index("report 7 is out")
    assert workflow.status.success and workflow.status.child_count == 3
