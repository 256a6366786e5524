"""`make demo`: migrate, create a demo admin, start a worker and the web server, and
feed them a stream of jobs until Ctrl-C, which stops everything this script started.

The worker's and the web server's output go to log files (DEMO_LOG_DIR, default
.wurk/demo/), so their job and request lines never scroll the banner with the URLs away.
"""

import os
import random
import signal
import socket
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

HOST = "127.0.0.1"
PORT = int(os.environ.get("DEMO_PORT", "8000"))
LOG_DIR = Path(os.environ.get("DEMO_LOG_DIR") or ROOT / ".wurk" / "demo")
USER, PASSWORD = "demo", "demo"
WEB_START_TIMEOUT_S = 60


def port_taken(port: int) -> bool:
    """Whether the port runserver is about to bind is already in use."""
    with socket.socket() as probe:
        # Bound as runserver binds it (SO_REUSEADDR): a port in TIME_WAIT counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return True
    return False


def prepare_database() -> str:
    """Migrate, and with DEBUG on create the demo admin; return the banner's login line."""
    call_command("migrate", interactive=False, verbosity=0)
    if not settings.DEBUG:
        return ""
    from django.contrib.auth import get_user_model
    User = get_user_model()
    if not User.objects.filter(username=USER).exists():
        User.objects.create_superuser(USER, "demo@example.com", PASSWORD)
    return f"  Login:     {USER} / {PASSWORD}  (DEBUG is on)\n"


def start(name: str, *args: str) -> subprocess.Popen:
    # Own session, so Ctrl-C reaches only this script, which then stops them in order.
    with open(LOG_DIR / f"{name}.log", "ab") as log:
        return subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_web(children: dict) -> bool:
    """Wait until the web server accepts connections; False if a child exits first."""
    deadline = time.monotonic() + WEB_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(child.poll() is not None for child in children.values()):
            return False
        with socket.socket() as client:
            if client.connect_ex((HOST, PORT)) == 0:
                return True
        time.sleep(0.1)
    return False


def banner(login: str) -> str:
    return (f"\nWurk demo running.\n"
            f"  Admin:     http://{HOST}:{PORT}/admin/\n"
            f"  Dashboard: http://{HOST}:{PORT}/admin/wurk/\n{login}"
            f"  Logs:      {LOG_DIR / 'worker.log'} (jobs), {LOG_DIR / 'web.log'} (requests)\n"
            f"Press Ctrl-C to stop.")


def report_failure(children: dict) -> int:
    """Say which child stopped on its own (or that the web server never answered)."""
    for name, child in children.items():
        if child.poll() is not None:
            log = LOG_DIR / f"{name}.log"
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"\nmake demo: the {name} process exited with status {child.returncode}; "
                  f"the end of {log}:\n" + "\n".join(tail), file=sys.stderr, flush=True)
            return 1
    print(f"\nmake demo: the web server did not answer on {HOST}:{PORT} within "
          f"{WEB_START_TIMEOUT_S} s; see {LOG_DIR / 'web.log'}", file=sys.stderr, flush=True)
    return 1


def enqueue_some() -> int:
    """Push a few demo jobs; return how many."""
    from example_project.shop import tasks
    from example_project.shop.models import Order
    tasks.fetch_exchange_rate.perform_async(random.choice(["EUR", "USD", "JPY", "GBP"]))
    pushed = 1
    if random.random() < 0.3:
        tasks.crunch_report.perform_async(random.randint(20_000, 200_000))
        pushed += 1
    if random.random() < 0.4:
        order = Order.objects.create(customer=random.choice(["ada", "bob", "cy"]),
                                     cents=random.randint(100, 10_000))
        tasks.charge_order.perform_async(order.pk)
        pushed += 1
    if random.random() < 0.1:
        tasks.HardJob.perform_in(random.randint(5, 60), "demo", random.randint(1, 9))
        pushed += 1
    return pushed


def feed(children: dict) -> None:
    """Push jobs until a child exits; on a terminal, keep one status line up to date."""
    from wurk_django.core.api import Stats
    tty = sys.stdout.isatty()
    before = Stats() if tty else None
    pushed = 0
    while all(child.poll() is None for child in children.values()):
        pushed += enqueue_some()
        if tty:
            now = Stats()
            # Workers count what they ran at each heartbeat, so these lag a few seconds.
            print(f"\r{pushed} jobs pushed; {(now.processed or 0) - (before.processed or 0)} "
                  f"processed and {(now.failed or 0) - (before.failed or 0)} failed as of the "
                  f"last heartbeat   ", end="", flush=True)
        time.sleep(random.uniform(0.05, 0.5))


def main() -> int:
    if port_taken(PORT):
        print(f"make demo: port {PORT} on {HOST} is taken (is another server running?). "
              f"Stop it, or use another port: make demo DEMO_PORT={PORT + 1}", file=sys.stderr)
        return 2
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    login = prepare_database()
    children: dict[str, subprocess.Popen] = {}
    stopping = False
    status = 0

    def on_signal(signum, frame):
        # TERM or HUP (a closed terminal) stop the demo as Ctrl-C does; a second signal
        # while stopping kills what is left, since the children have their own sessions
        # and would otherwise outlive this script.
        if not stopping:
            raise KeyboardInterrupt
        for child in children.values():
            if child.poll() is None:
                child.kill()

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, on_signal)
    try:
        children["worker"] = start("worker", "wurk_worker", "-c", "5")
        children["web"] = start("web", "runserver", "--noreload", f"{HOST}:{PORT}")
        if wait_for_web(children):
            print(banner(login), flush=True)  # last: nothing else is printed until Ctrl-C
            feed(children)
        status = report_failure(children)  # reached only when something stopped on its own
    except KeyboardInterrupt:
        print("\nStopping the demo...", flush=True)
    finally:
        stopping = True
        stop(children.values())
        stop_project_redis()
    return status


def stop(children) -> None:
    """TERM each child, then give it the worker's shutdown grace before killing it."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(35)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def stop_project_redis() -> None:
    if os.environ.get("WURK_REDIS_URL") or settings.WURK.get("REDIS_URL") != "embedded":
        return
    try:
        call_command("wurk_redis", "stop")
    except Exception as exc:  # noqa: BLE001 - the demo must still exit cleanly
        print(f"Could not stop the project Redis: {exc}")


if __name__ == "__main__":
    sys.exit(main())
