"""Settings for the cron process tests: the suite's settings plus a loop firing every
5 seconds and leader timings in seconds, so hand-overs happen within a test."""

from tests.settings import *  # noqa: F403
from tests.settings import WURK

PROBE_QUEUE = "cron-probe"  # no worker serves it: every push stays there to be counted
WURK = {
    **WURK,
    "CRON_TICK_SECONDS": 1,
    "LEADER_TTL_SECONDS": 2,
    "LEADER_RENEW_SECONDS": 0.5,
    "LEADER_RETRY_SECONDS": 0.5,
    "CRON": [{"cron": "* * * * * */5", "task": "CronProbe", "queue": PROBE_QUEUE}],
}
