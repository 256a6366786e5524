"""The test harness itself: processes the tests start take SIGINT however the suite was
launched, `make test` fails on any skip, and it runs leg 2 even when leg 1 fails."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.workers import ROOT, alive

SIGINT_BIT = 1 << (signal.SIGINT - 1)


def sigint_ignored(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as status:
        mask = next(line for line in status if line.startswith("SigIgn:")).split()[1]
    return bool(int(mask, 16) & SIGINT_BIT)


def test_processes_started_by_a_suite_that_ignores_sigint_still_take_it():
    # As `nohup make test` or `( trap '' INT; make test )` start the suite: SIGINT ignored.
    # The stand-in for pytest imports the harness, as tests/conftest.py does, then starts
    # a child as a test starts a worker or a web server.
    suite = ("import subprocess, sys, tests.support.workers\n"
             "child = subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()'])\n"
             "print(child.pid, flush=True)\n"
             "sys.exit(child.wait())\n")
    parent = subprocess.Popen([sys.executable, "-c", suite], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                          signal.SIG_IGN))
    child = int(parent.stdout.readline())
    try:
        assert not sigint_ignored(child)
        os.kill(parent.pid, signal.SIGINT)  # the suite itself still ignores it...
        os.kill(child, signal.SIGINT)  # ...while the child stops: KeyboardInterrupt (1) or
        assert parent.wait(30) in (1, 256 - signal.SIGINT)  # killed by it (exit(-2) = 254)
    finally:
        for pid in (child, parent.pid):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        parent.stdout.close()
        parent.wait()


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    (folder / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:django", "-p",
                           "no:cacheprovider", "-c", str(folder / "pytest.ini"), "--rootdir",
                           str(folder), *args, str(folder)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_under_make_test_every_skip_fails_the_run_with_its_reason(tmp_path):
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    pass\n\n"
        "def test_needs_a_tool():\n    pytest.skip('no frobnicator installed')\n\n"
        "@pytest.mark.xfail(reason='known')\ndef test_expected_to_fail():\n    assert False\n")
    (tmp_path / "browser").mkdir()
    (tmp_path / "browser" / "conftest.py").write_text(
        "import pytest\npytest.skip('/usr/bin/chromium not found', allow_module_level=True)\n")
    (tmp_path / "browser" / "test_page.py").write_text("def test_page():\n    pass\n")
    by_hand = run_pytest(tmp_path)
    assert by_hand.returncode == 0, by_hand.stdout  # plain skips for a developer
    strict = run_pytest(tmp_path, "-p", "tests.support.require_all")
    assert strict.returncode == 1, strict.stdout
    assert "make test allows no skips" in strict.stdout
    assert "test_some.py::test_needs_a_tool: no frobnicator installed" in strict.stdout
    assert "browser: /usr/bin/chromium not found" in strict.stdout
    assert "test_expected_to_fail" not in strict.stdout.split("make test allows no skips")[1]


def fake_leg(folder: Path, leg: str) -> str:
    """A stand-in for a leg's virtualenv: this interpreter, marked with the leg's number,
    stamped as installed so `make` builds nothing."""
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f'#!/bin/sh\nWURK_TEST_LEG={leg} exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (folder / ".installed").touch()
    return str(folder)


def test_make_test_runs_leg_2_when_leg_1_fails_and_exits_non_zero(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "pytest.ini").write_text("[pytest]\n")
    (probe / "test_leg.py").write_text(
        "import os\n\ndef test_leg():\n    assert os.environ['WURK_TEST_LEG'] == '2'\n")
    leg1, leg2 = fake_leg(tmp_path / "leg1", "1"), fake_leg(tmp_path / "leg2", "2")
    pytest_args = (f"-p no:django -p no:cacheprovider -c {probe}/pytest.ini "
                   f"--rootdir {probe} {probe}")
    result = subprocess.run(
        ["make", "--no-print-directory", "-o", "check-assets", "-o", "system-deps",
         "-o", f"{leg1}/.installed", "-o", f"{leg2}/.installed", "test",
         f"LEG1_VENV={leg1}", f"LEG2_VENV={leg2}", f"PY_NEW={sys.executable}",
         f"PYTEST_ARGS={pytest_args}", "NO_LINT=1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    leg_1, leg_2 = output.split("=== leg 2:")
    assert "=== leg 1:" in leg_1 and "1 failed" in leg_1
    assert "1 passed" in leg_2 and "make test: FAILED" in leg_2
