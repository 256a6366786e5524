"""`make demo`: migrate, create a demo admin, start a worker and the web server, and
feed them a stream of jobs until Ctrl-C, which stops everything this script started."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

import django  # noqa: E402  (the path and settings module must be set first)

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

PORT = int(os.environ.get("DEMO_PORT", "8000"))
USER, PASSWORD = "demo", "demo"


def prepare_database() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    if not settings.DEBUG:
        return
    from django.contrib.auth import get_user_model
    User = get_user_model()
    if not User.objects.filter(username=USER).exists():
        User.objects.create_superuser(USER, "demo@example.com", PASSWORD)
    print(f"Demo admin login: {USER} / {PASSWORD}  (DEBUG is on)")


def start(*args: str) -> subprocess.Popen:
    # Own process group, so Ctrl-C reaches only this script, which then stops them in order.
    return subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT,
                            start_new_session=True)


def enqueue_some() -> None:
    from example_project.shop import tasks
    from example_project.shop.models import Order
    tasks.fetch_exchange_rate.perform_async(random.choice(["EUR", "USD", "JPY", "GBP"]))
    if random.random() < 0.3:
        tasks.crunch_report.perform_async(random.randint(20_000, 200_000))
    if random.random() < 0.4:
        order = Order.objects.create(customer=random.choice(["ada", "bob", "cy"]),
                                     cents=random.randint(100, 10_000))
        tasks.charge_order.perform_async(order.pk)
    if random.random() < 0.1:
        tasks.HardJob.perform_in(random.randint(5, 60), "demo", random.randint(1, 9))


def main() -> int:
    prepare_database()
    children: list[subprocess.Popen] = []
    stopping = False

    def on_signal(signum, frame):
        # TERM or HUP (a closed terminal) stop the demo as Ctrl-C does; a second signal
        # while stopping kills what is left, since the children have their own sessions
        # and would otherwise outlive this script.
        if not stopping:
            raise KeyboardInterrupt
        for child in children:
            if child.poll() is None:
                child.kill()

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, on_signal)
    try:
        children += [start("wurk_worker", "-c", "5"),
                     start("runserver", "--noreload", f"127.0.0.1:{PORT}")]
        print(f"\nWurk demo running. Admin: http://127.0.0.1:{PORT}/admin/  "
              f"Dashboard: http://127.0.0.1:{PORT}/admin/wurk/\nPress Ctrl-C to stop.\n",
              flush=True)
        while all(child.poll() is None for child in children):
            enqueue_some()
            time.sleep(random.uniform(0.05, 0.5))
    except KeyboardInterrupt:
        print("\nStopping the demo...", flush=True)
    finally:
        stopping = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(35)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        stop_embedded_redis()
    return 0


def stop_embedded_redis() -> None:
    if os.environ.get("WURK_REDIS_URL") or settings.WURK.get("REDIS_URL") != "embedded":
        return
    try:
        call_command("wurk_redis", "stop")
    except Exception as exc:  # the demo must still exit cleanly
        print(f"Could not stop the embedded Redis: {exc}")


if __name__ == "__main__":
    sys.exit(main())
