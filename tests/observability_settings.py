"""Settings for the metrics and tracing worker tests: the suite's settings plus what the
environment switches on (tests/observability.py names the variables)."""

import os

from tests.observability import SPANS_FILE, STATSD_BROKEN, STATSD_PORT, install_span_file
from tests.settings import *  # noqa: F403
from tests.settings import WURK

WURK = {**WURK, "LEADER_TTL_SECONDS": 2, "LEADER_RENEW_SECONDS": 0.5,
        "LEADER_RETRY_SECONDS": 0.5}
if os.environ.get(STATSD_PORT) or os.environ.get(STATSD_BROKEN):
    WURK.update(STATSD="tests.observability.statsd_client", STATSD_JOB_METRICS=True,
                STATSD_OPTIONS="tests.observability.statsd_options")
if os.environ.get(SPANS_FILE):
    install_span_file(os.environ[SPANS_FILE])
    WURK["OPENTELEMETRY"] = True
if os.environ.get("WURK_TEST_RETAIN_HISTORY"):
    WURK["RETAIN_HISTORY"] = float(os.environ["WURK_TEST_RETAIN_HISTORY"])
