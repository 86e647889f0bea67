"""End to end: the explorer served by ``streamlit run`` and read in a real, headless chromium.

The AppTest tests run the pages in-process; this one checks what they miss: the server starts,
the multipage navigation works in a browser, and the page renders. It needs Debian's chromium
(``apt-get install -y chromium``; ``bash .ci/run`` installs it) and the Python ``playwright``
package (no playwright browser download). It fails, rather than skips, when either is missing,
so CI cannot pass without it; set MINIDB_SKIP_BROWSER=1 to leave it out on purpose.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
START_TIMEOUT_S = 60
PAGE_TIMEOUT_MS = 30_000


@pytest.fixture(scope="session")
def sync_playwright():
    """playwright's sync API, or a failure that says how to install what is missing (checked
    before the store is seeded, so a skip or a failure comes at once)."""
    if os.environ.get("MINIDB_SKIP_BROWSER") == "1":
        pytest.skip("MINIDB_SKIP_BROWSER=1: the browser test is left out on purpose")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser test needs the playwright package: .venv/bin/pip install "
                    "playwright (no `playwright install` needed; Debian's chromium is used), or "
                    "set MINIDB_SKIP_BROWSER=1 to leave the test out", pytrace=False)
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"the browser test needs Debian's chromium at {CHROMIUM}: sudo apt-get "
                    f"install -y chromium (bash .ci/run does it), or set MINIDB_SKIP_BROWSER=1 "
                    f"to leave the test out", pytrace=False)
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_healthy(port: int, server: subprocess.Popen, log: Path) -> None:
    """Poll Streamlit's health endpoint until it answers ok; fail if the server dies or takes
    longer than START_TIMEOUT_S."""
    deadline = time.monotonic() + START_TIMEOUT_S
    url = f"http://127.0.0.1:{port}/_stcore/health"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with status {server.returncode} before it was "
                        f"ready:\n{log.read_text()[-3000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    pytest.fail(f"streamlit was not healthy at {url} within {START_TIMEOUT_S} s:\n"
                f"{log.read_text()[-3000:]}", pytrace=False)


def _stop(server: subprocess.Popen) -> None:
    """Stop the server and everything it started (its own process group)."""
    if server.poll() is not None:
        return
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=10)
    except ProcessLookupError:
        pass


@pytest.mark.browser
def test_explorer_in_a_headless_browser(sync_playwright, seeded_store_path, tmp_path):
    store = tmp_path / "results.duckdb"
    shutil.copyfile(seeded_store_path, store)
    port = _free_port()
    log = tmp_path / "streamlit.log"
    env = {**os.environ, "MINIDB_RESULTS": str(store)}
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "Home.py"),
             "--server.headless", "true", "--server.port", str(port),
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_healthy(port, server, log)
        shot = tmp_path / "findings.png"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(PAGE_TIMEOUT_MS)
                page.goto(f"http://127.0.0.1:{port}/")
                page.get_by_role("heading", name="minidb explorer").wait_for()
                page.get_by_text("Papers with stored runs").wait_for()
                # the store path is rendered in a code block; wait for its text (not the raw
                # HTML, which streamlit fills in progressively)
                page.get_by_text(str(store)).first.wait_for()

                page.get_by_role("link", name="Findings", exact=True).click()
                page.get_by_text("gamma.0pct_indexed_slower_with_nodes").wait_for()
                assert page.url.rstrip("/").endswith("/Findings")
                page.screenshot(path=shot, full_page=True)
            finally:
                browser.close()
        assert shot.is_file() and shot.stat().st_size > 10_000, "the screenshot looks empty"
        assert "Traceback" not in log.read_text()
    finally:
        _stop(server)
