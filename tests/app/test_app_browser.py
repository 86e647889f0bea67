"""End to end: the explorer served by ``streamlit run`` and read in a real, headless chromium.

The AppTest tests run the pages in-process; this one checks what they miss: the server starts,
the multipage navigation works in a browser, and the page renders. It needs Debian's chromium
(``apt-get install -y chromium``; ``bash .ci/run`` installs it) and the Python ``playwright``
package (no playwright browser download). It fails, rather than skips, when either is missing,
so CI cannot pass without it; set MINIDB_SKIP_BROWSER=1 to leave it out on purpose.

``test_every_chart_has_a_readable_plot_area`` screenshots every page (the Published vs
reproduced page once per table and figure of every experiment, through its
``?experiment=...&reference=...`` links) and measures each chart's plot area from the SVG Vega
draws: the length of each x axis's domain line is a panel's width, of each y axis's its height.
Screenshots and ``plot_sizes.json`` go to ``$MINIDB_SCREENSHOTS`` (default: the test's tmp
folder).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from app_stores import copy_store

from minidb.experiments import experiments

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


def _start_streamlit(port: int, env: dict, log: Path) -> subprocess.Popen:
    """The explorer served headless on ``port`` (its own process group, see ``_stop``)."""
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "Home.py"),
             "--server.headless", "true", "--server.port", str(port),
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


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


@contextlib.contextmanager
def _explorer(sync_playwright, source: Path, folder: Path):
    """The explorer served by ``streamlit run`` on a copy of the store ``source`` and a headless
    chromium: yields (the server's URL, the browser, the copy, streamlit's log)."""
    store = folder / "results.duckdb"
    copy_store(source, store)
    port = _free_port()
    log = folder / "streamlit.log"
    server = _start_streamlit(port, {**os.environ, "MINIDB_RESULTS": str(store)}, log)
    try:
        _wait_until_healthy(port, server, log)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                yield f"http://127.0.0.1:{port}", browser, store, log
            finally:
                browser.close()
    finally:
        _stop(server)


@pytest.fixture(scope="module")
def representative_explorer(sync_playwright, chart_store_path, tmp_path_factory):
    """One server and browser for the default run's two browser tests, on the store of the
    representative charts (the seeded store and a run of each experiment they show)."""
    with _explorer(sync_playwright, chart_store_path("representative"),
                   tmp_path_factory.mktemp("explorer")) as served:
        yield served


@pytest.mark.browser
def test_explorer_in_a_headless_browser(representative_explorer, tmp_path):
    url, browser, store, log = representative_explorer
    shot = tmp_path / "findings.png"
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(f"{url}/")
        page.get_by_role("heading", name="minidb explorer").wait_for()
        page.get_by_text("Papers with stored runs").wait_for()
        # the store path is rendered in a code block; wait for its text (not the raw HTML,
        # which streamlit fills in progressively)
        page.get_by_text(str(store)).first.wait_for()

        page.get_by_role("link", name="Findings", exact=True).click()
        page.get_by_text("gamma.0pct_indexed_slower_with_nodes").wait_for()
        assert page.url.rstrip("/").endswith("/Findings")
        page.screenshot(path=shot, full_page=True)
    finally:
        page.close()
    assert shot.is_file() and shot.stat().st_size > 10_000, "the screenshot looks empty"
    assert "Traceback" not in log.read_text()


#: runs that give every experiment rows (about 25 s), added to the session's seeded store
CHART_RUNS = (
    ("gamma.selection", {"scale": 0.005}),
    ("gamma.aggregates", {"scale": 0.005, "sizes": [10_000, 100_000]}),
    ("gamma.updates", {"scale": 0.005, "sizes": [10_000, 100_000]}),
    ("gamma.access_paths", {"scale": 0.05, "page_sizes": [4096, 16384]}),
    ("gamma.joins", {"scale": 0.02, "sizes": [10_000, 100_000]}),
    ("gamma.join_speedup", {"scale": 0.05, "nodes": [1, 2, 4]}),
    ("gamma.join_memory", {"scale": 0.1, "shares": [100, 35],
                           "algorithms": ["simple_hash", "hybrid_hash"]}),
    ("gamma.join_page_size", {"scale": 0.02, "page_sizes": [2048, 8192, 32768]}),
    ("tandem.speedup", {"scale": 0.001, "partitions": [2, 4]}),
    ("tandem.scaleup", {"scale": 0.001, "partitions": [2, 4]}),
    ("lhstar.partition_size", {"scale": 0.002, "millions": [1, 5, 6]}),
    ("lhstar.remote_overhead", {"scale": 0.002, "millions": [1, 2]}),
    ("lhstar.scalability", {"scale": 0.002, "nodes": [1, 2, 4], "millions": [1, 2],
                            "ratio_nodes": [1, 2]}),
    # Volcano at a tenth of the records (32 KB clusters need 3 per process: at most 8 disks)
    ("volcano.initial", {"scale": 0.1, "disks": [2, 4, 8]}),
    ("volcano.clusters", {"scale": 0.1, "disks": [4, 8], "cluster_kb": [4, 32]}),
    ("volcano.alignment", {"scale": 0.1, "disks": [4, 8], "alignments": [1, 16]}),
    ("volcano.buffer_size", {"scale": 0.1, "disks": [4, 8]}),
    ("volcano.unfix", {"scale": 0.1, "disks": [4, 8], "schemes": ["simple", "macro_1"]}),
    ("volcano.pools_simple", {"scale": 0.1, "disks": [8], "pools": [1, 2, 4]}),
    ("volcano.pools", {"scale": 0.1, "disks": [4, 8]}),
    ("volcano.final", {"scale": 0.1, "disks": [2, 4, 8], "initial_disks": [2, 8]}),
    ("volcano.staggering", {"scale": 0.1, "disks": [8], "delays_ms": [0, 2]}),
    ("volcano.affinity", {"scale": 0.1, "disks": [4, 8]}),
    ("tandem.oltp_scaleup", {"scale": 0.005, "processors": [4, 8], "transactions": 10,
                             "warmup": 5}),
    ("ingres.updates", {"scale": 0.05}),
    ("ingres.retrieve", {"scale": 0.05}),
    ("ingres.join", {"scale": 0.05, "moved": ["dept"]}),
)
#: the smallest plot area a chart panel may have (pixels); the old Table 1 chart had ~15 px
MIN_PLOT_HEIGHT = 150
MIN_PLOT_WIDTH = 200

#: per chart on the page, its plot areas (one per panel) as drawn on the screen: the background
#: rectangle of each Vega view group (the root frame, or each cell of a concatenation) spans
#: exactly the view's width x height, the area inside the axes; legends, titles and axes are
#: groups of other roles (a legend's entries are scopes inside it). Empty backgrounds (a concatenation's root) and rectangles that enclose
#: another (a frame around its panels) are left out.
MEASURE_CHARTS = """() => Array.from(
    document.querySelectorAll('[data-testid="stVegaLiteChart"]')).map(chart => {
  const found = [];
  chart.querySelectorAll('g.mark-group.role-frame > g > path.background, '
                         + 'g.mark-group.role-scope > g > path.background').forEach(path => {
    if (path.closest('.role-legend')) return;  // a legend's entries are groups too
    const r = path.getBoundingClientRect();
    const rect = [r.x, r.y, r.width, r.height].map(Math.round);
    if (rect[2] > 1 && rect[3] > 1 && !found.some(f => f.join() === rect.join())) {
      found.push(rect);
    }
  });
  const encloses = (a, b) => a !== b && a[0] <= b[0] && a[1] <= b[1]
      && a[0] + a[2] >= b[0] + b[2] && a[1] + a[3] >= b[1] + b[3];
  const areas = found.filter(a => !found.some(b => encloses(a, b)));
  const box = chart.getBoundingClientRect();
  return {areas: areas.map(a => [a[2], a[3]]),
          box: [Math.round(box.width), Math.round(box.height)]};
})"""
#: true once the page finished running and drew its chart (or said there is none to draw)
PAGE_DONE = """() => {
  const running = document.querySelector('[data-testid="stStatusWidget"]');
  const text = document.body.innerText;
  const charts = document.querySelectorAll('[data-testid="stVegaLiteChart"] g.role-axis');
  return !running && (charts.length > 0 || text.includes('Nothing to plot')
                      || text.includes('has no numbers on the')
                      || text.includes('No stored run') || text.includes('rows along an axis'));
}"""


#: the default run's charts besides the pages' defaults (Gamma's Table 1: two panels, a log
#: axis): one table or figure of each paper, among them the one without a chart (the optimizer's
#: choice, gamma.access_paths), tables whose columns are not an axis and draw bars (Volcano's
#: Figure 2, Distributed INGRES's Table 1) and two figures of the seeded runs
REPRESENTATIVE = (("gamma.selection_speedup", "Figure 2"), ("gamma.page_size", "Figure 6"),
                  ("gamma.access_paths", "Figure 8"), ("tandem.speedup", "Table 2"),
                  ("lhstar.partition_size", "Section 5.1 (table 1 of 2)"),
                  ("volcano.clusters", "Figure 2"), ("ingres.updates", "Table 1"))


def _chart_runs(pages: str) -> tuple[tuple[str, dict], ...]:
    """The runs of ``CHART_RUNS`` the chart pages of ``pages`` need."""
    if pages != "representative":
        return CHART_RUNS
    needed = {"gamma.selection"} | {name for name, _ in REPRESENTATIVE}
    return tuple((name, overrides) for name, overrides in CHART_RUNS if name in needed)


@pytest.fixture(scope="module")
def chart_store_path(seeded_store_path: Path, computed_once):
    """``chart_store_path(pages)``: the seeded store plus one small run of every other
    experiment the pages need, made once per session for every worker (read it through a
    copy)."""
    from minidb.experiments.reproduce import run_and_store
    from minidb.results import ResultsStore

    def make(pages: str) -> Path:
        runs = _chart_runs(pages)

        def run() -> Path:
            path = computed_once.folder / f"charts-{pages}" / "results.duckdb"
            path.parent.mkdir()
            copy_store(seeded_store_path, path)
            store = ResultsStore(path)
            for name, overrides in runs:
                run_and_store(name, store, overrides)
            return path

        return computed_once(f"app_chart_store_{len(runs)}_runs", run)

    return make


def _shots_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MINIDB_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _plot_sizes(page, url: str, name: str, shots: Path) -> list[dict]:
    """Open ``url``, wait until it ran, screenshot it and measure its charts."""
    page.goto(url)
    page.wait_for_function(PAGE_DONE, timeout=PAGE_TIMEOUT_MS, polling=250)
    page.wait_for_timeout(300)  # the chart's last layout pass
    page.screenshot(path=shots / f"{name}.png")
    return page.evaluate(MEASURE_CHARTS)


def _chart_pages(pages: str) -> list[tuple[str, str]]:
    """(screenshot name, URL path) of the pages with charts: each page's default, then the
    Published vs reproduced page for ``REPRESENTATIVE`` (``pages="representative"``), each
    experiment's first table or figure (``"first-reference"``) or all (``"every-reference"``)."""
    targets = [("published-default", "Published_vs_reproduced"),
               ("compare-default", "Compare_runs"),
               ("commit-default", "Commit_protocols")]
    for exp in experiments():
        references = {"representative": [r for e, r in REPRESENTATIVE if e == exp.name],
                      "first-reference": exp.references[:1],
                      "every-reference": exp.references}[pages]
        for reference in references:
            if (exp.name, reference) == ("gamma.selection", "Table 1") and pages != "every-reference":
                continue  # the page's default, measured above
            query = urllib.parse.urlencode({"experiment": exp.name, "reference": reference})
            slug = f"published-{exp.name}-{reference}".replace(" ", "_").replace(".", "_")
            targets.append((slug, f"Published_vs_reproduced?{query}"))
    return targets


@pytest.mark.browser
@pytest.mark.parametrize("pages", [
    "representative", pytest.param("first-reference", marks=pytest.mark.slow),
    pytest.param("every-reference", marks=pytest.mark.slow)])
def test_every_chart_has_a_readable_plot_area(sync_playwright, chart_store_path, request,
                                              tmp_path, pages):
    """In the default run: every page's default and one table or figure of each paper
    (``REPRESENTATIVE``, about 20 s); with ``-m slow``, each experiment's first table or figure
    (about 60 s), and every table and figure of every experiment."""
    shots = _shots_dir(tmp_path)
    targets = _chart_pages(pages)
    measured: dict[str, list[dict]] = {}
    with contextlib.ExitStack() as stack:
        if pages == "representative":
            url, browser, _, log = request.getfixturevalue("representative_explorer")
        else:
            url, browser, _, log = stack.enter_context(
                _explorer(sync_playwright, chart_store_path(pages), tmp_path))
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        stack.callback(page.close)
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        for name, path in [("home", ""), ("run", "Run"), ("findings", "Findings")]:
            page.goto(f"{url}/{path}")
            page.wait_for_function(
                "() => !document.querySelector('[data-testid=\"stStatusWidget\"]') "
                "&& document.querySelector('h1')", timeout=PAGE_TIMEOUT_MS)
            page.wait_for_timeout(300)
            page.screenshot(path=shots / f"{name}.png")
        for name, path in targets:
            measured[name] = _plot_sizes(page, f"{url}/{path}", name, shots)
    (shots / "plot_sizes.json").write_text(json.dumps(measured, indent=1))
    print(f"screenshots and plot_sizes.json in {shots}")
    drawn = {name: charts for name, charts in measured.items() if charts}
    # every experiment has rows, so every page and every table or figure draws a chart (a table
    # whose columns are not an axis, such as Distributed INGRES's or Volcano's Figure 2, whose
    # two floors the paper states in prose, draws bars), but gamma.access_paths (the optimizer's
    # choice: flags, no times on the modeled clock)
    chartless = sorted(set(measured) - set(drawn))
    assert chartless == ["published-gamma_access_paths-Figure_8"], f"no chart on {chartless}"
    assert "compare-default" in drawn and "published-default" in drawn
    small = {}
    for name, charts in drawn.items():
        for chart in charts:
            print(f"{name:55} plot areas (w x h px) "
                  f"{', '.join(f'{w}x{h}' for w, h in chart['areas'])}; chart {chart['box']}")
            if not chart["areas"] or any(w < MIN_PLOT_WIDTH or h < MIN_PLOT_HEIGHT
                                         for w, h in chart["areas"]):
                small[name] = chart
    assert not small, f"charts with a plot area under {MIN_PLOT_WIDTH}x{MIN_PLOT_HEIGHT}: {small}"
    assert "Traceback" not in log.read_text()
