"""The dashboard in a real headless Chromium: Debian's /usr/bin/chromium driven by
Playwright (never a downloaded browser), against pytest-django's live server running
tests.settings on the suite's private Redis.

One browser for the whole package; each test gets a fresh context (cookies, storage)
and logs in through the admin's login form. Screenshots go to test-artifacts/screenshots/.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("WURK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
PASSWORD = "wurk-browser-tests"
MOUNT = "/admin/wurk/"

if not (shutil.which(CHROMIUM) or os.access(CHROMIUM, os.X_OK)):
    pytest.skip(f"{CHROMIUM} not found: install Debian's Chromium with "
                "'sudo apt-get install -y chromium' (make test does this as root)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright "
                               "(the [test] extra has it; browsers are never downloaded)")


@pytest.fixture(scope="package")
def browser():
    # Playwright's sync API keeps an event loop on this thread; Django would then refuse
    # ORM calls made here (fixtures creating users). Allowed for this package only.
    saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_api.sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()
    playwright.stop()
    if saved is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved


class Console:
    """Page errors, dialogs and console errors seen during one test."""

    def __init__(self):
        self.errors: list[str] = []
        self.dialogs: list[str] = []

    def attach(self, page) -> None:
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on("console", self._console)
        page.on("dialog", self._dialog)
        page.on("response", self._response)

    def _console(self, message) -> None:
        # Failed loads are judged by _response: the live server answers the admin's
        # /static/ files with errors (tests.settings has no staticfiles app or root).
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(f"console: {message.text}")

    def _response(self, response) -> None:
        if MOUNT in response.url and response.status >= 500:
            self.errors.append(f"HTTP {response.status}: {response.url}")

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


@pytest.fixture
def console():
    return Console()


# A zone that is never UTC, so "local" and "UTC" times differ unless a test asks for UTC.
CONTEXT_OPTIONS = {"viewport": {"width": 1280, "height": 900}, "color_scheme": "light",
                   "timezone_id": "Europe/Paris"}


@pytest.fixture
def context_options(request):
    """Browser context options; a test changes them with
    `@pytest.mark.parametrize("context_options", [{...}], indirect=True)`."""
    return {**CONTEXT_OPTIONS, **getattr(request, "param", {})}


@pytest.fixture
def context(browser, console, context_options):
    context = browser.new_context(**context_options)
    # Poll every 2 s (the fastest choice) so tests wait less for the next refresh.
    context.add_init_script("window.localStorage.setItem('wurk.poll', '2')")
    context.set_default_timeout(15_000)
    yield context
    context.close()


@pytest.fixture
def page(context, console):
    page = context.new_page()
    console.attach(page)
    yield page
    assert console.errors == [], "\n".join(console.errors)


def make_user(django_user_model, username: str, **flags):
    return django_user_model.objects.create_user(username=username, password=PASSWORD,
                                                 is_staff=True, **flags)


@pytest.fixture
def admin_user(transactional_db, django_user_model):
    return make_user(django_user_model, "boss", is_superuser=True)


@pytest.fixture
def dashboard(live_server, page):
    """`dashboard.open(path, user)` logs in through the admin form the first time."""
    return Dashboard(live_server.url, page)


class Dashboard:
    def __init__(self, base: str, page):
        self.base = base
        self.page = page
        self.logged_in = False

    def url(self, path: str = "") -> str:
        return self.base + MOUNT + path

    def login(self, user) -> None:
        self.page.goto(self.url())
        # Not logged in: the shell redirects to the admin's own login form.
        assert "/admin/login/" in self.page.url
        self.page.fill("#id_username", user.username)
        self.page.fill("#id_password", PASSWORD)
        self.page.click("input[type=submit]")
        self.page.wait_for_url(re.compile(re.escape(self.url()) + r"$"))
        self.page.wait_for_selector(".w-app")
        # The polled numbers have arrived (no wait_for_function: the CSP forbids eval).
        self.page.locator('[data-stat="latency"]').wait_for()
        self.logged_in = True

    def open(self, path: str = "") -> None:
        self.page.goto(self.url(path))
        self.page.wait_for_selector(".w-app")
        self.page.wait_for_selector(".w-loading", state="detached")

    def stat(self, name: str) -> int:
        text = self.page.locator(f'[data-stat="{name}"] dd').inner_text()
        return int(text.replace(",", "")) if text.replace(",", "").isdigit() else -1

    def screenshot(self, name: str, target: Path | None = None) -> Path:
        """A full-page picture once nothing is loading, every chart has drawn its canvas
        and the top bar holds numbers."""
        expect = sync_api.expect
        expect(self.page.locator(".w-loading")).to_have_count(0)
        expect(self.page.locator(".w-chart:not(:has(canvas))")).to_have_count(0)
        self.page.locator('[data-stat="latency"]').wait_for()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = target or SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path
