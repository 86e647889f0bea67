"""The ``minidb`` command.

    minidb datagen NAME --rows N --seed S --out FILE.parquet   generate a benchmark relation
    minidb demo [--rows N]                                     generate Wisconsin data, load it,
                                                               run the paper's selections and print
                                                               rows, access paths and counters
    minidb sql QUERY --table NAME=FILE.parquet ...             run one statement over Parquet files

    minidb list [PAPER]                                        the registered experiments
    minidb run EXPERIMENT [--nodes ...] [--scale ...] [--json] run one experiment, store its rows
    minidb reproduce PAPER|--all [--quick]                     run all of a paper's experiments
                                                               (--all: of every paper that has some)
    minidb report [PAPER] [--json] [--strict]                  reproduced vs published, cell by
                                                               cell, and the findings pass / fail
                                                               (no PAPER: every paper, and a total;
                                                               --strict: exit 1 if a finding fails)
    minidb runs [PAPER] [--json]                               the stored runs: id, experiment,
                                                               start, status, paper's configuration
    minidb app [--port P]                                      the Streamlit explorer

Results go to the results store (``--store FILE`` or $MINIDB_RESULTS, else the user's cache
directory). Long runs show a progress bar on stderr; ``--json`` prints machine-readable rows on
stdout. User mistakes (unknown generator or experiment, bad parameter, unsupported SQL ...) print
one line on stderr and exit with status 2; no traceback.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path

import click

from minidb.errors import MinidbError


def _user_errors(fn: Callable) -> Callable:
    """Turn a MinidbError into one line on stderr and exit status 2. Python running out of stack
    or memory on what the user asked for is also said in one line (the engine's own checks
    should catch both first; this is the safety net, not the mechanism)."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MinidbError as err:
            click.echo(f"minidb: error: {err}", err=True)
            sys.exit(2)
        except RecursionError:
            click.echo("minidb: error: the statement is nested too deeply for minidb (Python's "
                       "recursion limit was reached); split it into simpler statements", err=True)
            sys.exit(2)
        except MemoryError:
            click.echo("minidb: error: out of memory; use fewer rows or a smaller table",
                       err=True)
            sys.exit(2)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="minidb")
def main() -> None:
    """minidb: a teaching engine for parallel and distributed databases."""


@main.command()
@click.argument("name")
@click.option("--rows", "-n", type=int, required=True, help="Number of tuples to generate.")
@click.option("--seed", "-s", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Parquet file to write (replaced only once the new one is complete).")
@_user_errors
def datagen(name: str, rows: int, seed: int, out: Path) -> None:
    """Generate relation NAME (wisconsin, tandem, emp, dept, sortrec, intpairs) as Parquet."""
    from minidb import datagen as dg

    start = time.perf_counter()
    dg.check_output_path(out)  # before the work: a directory or a device is refused at once
    if out.parent and not out.parent.exists():
        raise MinidbError(f"directory {dg.shown_path(out.parent)} does not exist; create it or "
                          "choose another --out")
    replaced = out.exists()  # said aloud: an overwrite is never silent
    table = dg.generate(name, rows, seed=seed)
    dg.write_parquet(table, out)
    click.echo(f"wrote {table.num_rows:,} {name} tuples to {dg.shown_path(out)} "
               f"in {time.perf_counter() - start:.2f} s"
               + (" (it replaced the file that was there)" if replaced else ""))


@main.command()
@click.option("--rows", "-n", type=int, default=100_000, show_default=True,
              help="Tuples in the Wisconsin relation.")
@click.option("--page-size", type=int, default=4096, show_default=True, help="Disk page size in bytes.")
@click.option("--buffer-pages", type=int, default=1024, show_default=True, help="Buffer pool frames.")
@click.option("--policy", default="lru", show_default=True, help="Buffer replacement policy.")
@_user_errors
def demo(rows: int, page_size: int, buffer_pages: int, policy: str) -> None:
    """Generate Wisconsin data and run the Gamma paper's selections on one node."""
    from minidb.demo import run_demo

    run_demo(rows=rows, page_size=page_size, buffer_pages=buffer_pages, policy=policy, echo=click.echo)


@main.command()
@click.argument("query")
@click.option("--table", "-t", "tables", multiple=True, required=True, metavar="NAME=FILE.parquet",
              help="Load a Parquet file as table NAME (repeatable).")
@click.option("--index", "indexes", multiple=True, metavar="TABLE.COLUMN",
              help="Build a non-clustered B+ tree index (repeatable).")
@click.option("--clustered", "clustered", multiple=True, metavar="TABLE.COLUMN",
              help="Store TABLE in COLUMN order with a clustered index.")
@click.option("--page-size", type=int, default=4096, show_default=True)
@click.option("--explain", is_flag=True, help="Print the plan and the counters too.")
@_user_errors
def sql(query: str, tables: tuple[str, ...], indexes: tuple[str, ...], clustered: tuple[str, ...],
        page_size: int, explain: bool) -> None:
    """Run one SQL statement over tables loaded from Parquet files."""
    import minidb
    from minidb.display import format_table

    with minidb.connect(page_size=page_size) as db:
        for spec in tables:
            name, sep, path = spec.partition("=")
            if not sep or not name or not path:
                raise MinidbError(f"--table {spec!r}: write it as NAME=FILE.parquet")
            if Path(path).is_dir():
                raise MinidbError(f"--table {spec!r}: {path} is a directory; give a Parquet file")
            if not Path(path).is_file():
                raise MinidbError(f"--table {spec!r}: no such file {path}")
            db.create_table(name, path)
        for spec, is_clustered in [(s, False) for s in indexes] + [(s, True) for s in clustered]:
            table, sep, column = spec.partition(".")
            if not sep:
                raise MinidbError(f"index {spec!r}: write it as TABLE.COLUMN")
            db.create_index(table, column, clustered=is_clustered)
        result = db.sql(query)
        click.echo(format_table(result.to_arrow()))
        if explain:
            click.echo(result.explain())
            for key, value in sorted(result.counters.items()):
                click.echo(f"  {key} = {value}")


# -- experiments -------------------------------------------------------------------------------
_store_option = click.option(
    "--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Results store (a DuckDB file); default $MINIDB_RESULTS or the user's cache directory.")


class _Bar:
    """A click progress bar on stderr, driven by an experiment's Progress calls."""

    def __init__(self, title: str):
        self.title, self.bar = title, None

    def start(self, total: int, label: str = "") -> None:
        if not sys.stderr.isatty():  # no bar in logs and pipes: one line saying what runs
            click.echo(f"{self.title}: running ({total} steps)", err=True)
            return
        self.bar = click.progressbar(length=max(1, total), label=self.title, file=sys.stderr,
                                     show_pos=True, item_show_func=lambda x: x)
        self.bar.__enter__()

    def advance(self, label: str = "") -> None:
        if self.bar is not None:
            self.bar.update(1, label)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _open_store(path: Path | None):
    """The results store at ``path`` (from ``--store``), else the default one. A ``--store`` or
    ``$MINIDB_RESULTS`` in a directory that does not exist is refused: a typo must not start a
    new, empty store (only the default cache directory is created when missing)."""
    import os

    from minidb.results import STORE_ENV, ResultsStore, default_store_path

    if path is not None and not path.expanduser().parent.is_dir():
        raise MinidbError(f"--store {path}: directory {path.expanduser().parent} does not exist; "
                          f"create it or choose another --store")
    if path is None and os.environ.get(STORE_ENV, "").strip():
        named = default_store_path()
        if not named.parent.is_dir():
            raise MinidbError(f"${STORE_ENV}={named}: directory {named.parent} does not exist; "
                              f"create it or set {STORE_ENV} to another file")
    return ResultsStore(path)


@main.command(name="list")
@click.argument("paper", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the experiments as JSON.")
@_user_errors
def list_experiments(paper: str | None, as_json: bool) -> None:
    """List the registered experiments (of PAPER)."""
    import json

    from minidb.experiments import experiments

    found = experiments(paper)
    if as_json:
        click.echo(json.dumps([{"name": e.name, "paper": e.paper, "title": e.title,
                                "references": list(e.references), "defaults": e.defaults,
                                "quick": e.quick} for e in found], indent=1))
        return
    for e in found:
        click.echo(f"{e.name:26} {', '.join(e.references):40} {e.title}")
        click.echo(f"{'':26}   parameters: " + ", ".join(f"{k}={v}" for k, v in e.defaults.items()))


@main.command(name="run")
@click.argument("experiment")
@click.option("--nodes", default=None, help="Node counts, e.g. 1,2,4,8 (or one count).")
@click.option("--scale", type=float, default=None, help="Relation sizes x SCALE (1 = paper's).")
@click.option("--profile", default=None, help="Hardware profile for the modeled clock.")
@click.option("--backend", type=click.Choice(["inline", "ray"]), default=None,
              help="Run nodes in this process (inline) or as Ray actors (ray).")
@click.option("--quick", is_flag=True, help="The small settings reproduce --quick uses.")
@click.option("--set", "settings", multiple=True, metavar="NAME=VALUE",
              help="Any other parameter of the experiment (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON lines on stdout.")
@_store_option
@_user_errors
def run_cmd(experiment: str, nodes: str | None, scale: float | None, profile: str | None,
            backend: str | None, quick: bool, settings: tuple[str, ...], as_json: bool,
            store_path: Path | None) -> None:
    """Run one EXPERIMENT (see `minidb list`) and store its rows."""
    from minidb.experiments import ExperimentError, get_experiment
    from minidb.experiments.reproduce import run_and_store

    exp = get_experiment(experiment)
    overrides: dict = {"scale": scale, "profile": profile, "backend": backend}
    given = {k: f"--{k}" for k, v in overrides.items() if v is not None}
    if nodes is not None:
        key = "partitions" if "partitions" in exp.defaults else "nodes"
        overrides[key], given[key] = nodes, "--nodes"
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep:
            raise ExperimentError(f"--set {item!r}: write it as NAME=VALUE")
        key = key.strip()
        if key in given:  # which one to believe? say so rather than guess
            raise ExperimentError(f"{key} is given twice ({given[key]} and --set {item!r}); "
                                  f"give it once")
        overrides[key], given[key] = value, f"--set {item!r}"
    overrides = {k: v for k, v in overrides.items() if v is not None}
    unknown = [k for k in overrides if k not in exp.defaults]
    if unknown:
        raise ExperimentError(f"{exp.name} has no parameter {unknown[0]!r}; it takes: "
                              f"{', '.join(exp.defaults)}")
    store = _open_store(store_path)
    bar = _Bar(exp.name)
    try:
        run_id, rows = run_and_store(exp, store, overrides, quick, bar)
    finally:
        bar.close()
    _print_rows(rows, run_id, as_json)
    click.echo(f"run {run_id}: {len(rows)} rows stored in {store.path}", err=True)


def _print_rows(rows: list[dict], run_id: str, as_json: bool) -> None:
    import json

    if as_json:
        for r in rows:
            click.echo(json.dumps({**r, "run_id": run_id}))
        return
    shown = [r for r in rows if r["clock"] == "modeled"]
    click.echo(f"run {run_id}: {len(shown)} rows on the modeled clock (--json prints all "
               f"{len(rows)}, wall clock included)")
    click.echo(f"{'reference':9} {'row':40} {'column':16} {'metric':24} {'value':>12} unit")
    for r in shown:
        click.echo(f"{r['reference'] or '-':9} {r['row']:40} {r['column']:16} "
                   f"{r['metric']:24} {r['value']:12.4g} {r['unit']}")


@main.command()
@click.argument("paper", required=False)
@click.option("--all", "every", is_flag=True, help="Every paper that has experiments.")
@click.option("--quick", is_flag=True, help="Reduced sizes: minutes on a laptop.")
@click.option("--backend", type=click.Choice(["inline", "ray"]), default=None,
              help="Run nodes in this process (inline) or as Ray actors (ray).")
@_store_option
@_user_errors
def reproduce(paper: str | None, every: bool, quick: bool, backend: str | None,
              store_path: Path | None) -> None:
    """Run every experiment of PAPER (gamma, tandem, ...), or of every paper with --all, and
    store the results with the paper's configuration (what `minidb report` compares).

    Each experiment prints a line when it ends. One that fails is named (with its error) and
    the others still run and are stored; the command then exits with status 1."""
    from minidb.experiments import ExperimentError
    from minidb.experiments.machines import runtime
    from minidb.experiments.reproduce import ReproduceError, papers_with_experiments
    from minidb.experiments.reproduce import reproduce as run_all

    if every == (paper is not None):
        raise ExperimentError("name one paper or give --all, e.g. `minidb reproduce gamma` or "
                              "`minidb reproduce --all --quick`")
    papers = papers_with_experiments() if every else [paper]
    store = _open_store(store_path)
    bars: list[_Bar] = []

    def progress_for(exp):
        _close(bars)
        bars.append(_Bar(exp.name))
        return bars[-1]

    def on_finished(done) -> None:  # one line per experiment as it ends, terminal or not
        _close(bars)
        if done.error is None:
            click.echo(f"{done.experiment:26} run {done.run_id}  {done.rows:5} rows  "
                       f"{done.seconds:6.1f} s")
        else:
            click.echo(f"{done.experiment:26} FAILED after {done.seconds:.1f} s: {done.error}")
        sys.stdout.flush()

    failed = []
    with runtime(backend):  # with Ray: one instance and one pool of node actors for all papers
        for name in papers:
            start = time.perf_counter()
            try:
                done = run_all(name, store, quick, progress_for,
                               {"backend": backend} if backend else None,
                               on_finished=on_finished)
            except ReproduceError as err:
                failed.append(err)
                done = [f for f in err.finished if f.error is None]
            finally:
                _close(bars)
            click.echo(f"{name}: {len(done)} experiments in {time.perf_counter() - start:.1f} "
                       f"s; stored in {store.path}; see `minidb report {name}`")
    for err in failed:
        click.echo(f"minidb: error: {err}", err=True)
    if failed:
        sys.exit(1)


def _close(bars: list[_Bar]) -> None:
    for b in bars:
        b.close()


@main.command()
@click.argument("paper", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print cells and findings as JSON.")
@click.option("--strict", is_flag=True, help="Exit with status 1 if a finding fails.")
@_store_option
@_user_errors
def report(paper: str | None, as_json: bool, strict: bool, store_path: Path | None) -> None:
    """Reproduced vs published numbers, cell by cell, and the papers' findings, on the runs made
    with each paper's configuration (`minidb reproduce`); without PAPER, every paper that has
    experiments and a total line."""
    import json

    from minidb.experiments.report import format_report
    from minidb.experiments.reproduce import build_report, papers_with_experiments, total_line

    store = _open_store(store_path)
    papers = [paper] if paper else papers_with_experiments()
    reports = [r for p in papers for r in build_report(store, p)]
    if as_json:
        out = [{"paper": r.paper, "summary": r.summary(), "runs": [x["run_id"] for x in r.runs],
                "cells": r.cells, "findings": [f.__dict__ for f in r.findings]}
               for r in reports]
        if len(reports) > 1:
            out.append({"total": total_line(reports)})
        click.echo(json.dumps(out, default=str, indent=1))
    else:
        click.echo(format_report(reports))
    if strict and any(f.status == "fail" for r in reports for f in r.findings):
        sys.exit(1)
    if strict and not any(f.status == "pass" for r in reports for f in r.findings):
        # nothing stored (a new or wrong store): --strict must not pass on no evidence
        click.echo(f"minidb: error: --strict: no finding could be checked, since {store.path} "
                   f"holds no run with the paper's configuration; run `minidb reproduce "
                   f"{paper or 'PAPER'} --quick` first, or give the right --store", err=True)
        sys.exit(1)


@main.command(name="profile")
@click.argument("name", required=False)
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              help="Only constants whose source is of this kind (stated, derived, calibrated, "
                   "estimate, not modeled, what-if); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the constants as JSON.")
@_user_errors
def profile_cmd(name: str | None, kinds: tuple[str, ...], as_json: bool) -> None:
    """The hardware profiles behind the modeled clock; with NAME, every constant of that profile
    with its value, unit and source, and the published cells it was calibrated on."""
    import json
    from collections import Counter

    from minidb.cost import PROFILES, SOURCE_KINDS, get_profile

    wanted = {k.lower() for k in kinds}
    if unknown := sorted(wanted - set(SOURCE_KINDS)):
        raise MinidbError(f"unknown source kind {unknown[0]!r}; choose from "
                          f"{', '.join(SOURCE_KINDS)}")
    if name is None:
        if as_json:
            click.echo(json.dumps([{"name": p.name, "description": p.description}
                                   for p in PROFILES.values()], indent=1))
            return
        for p in PROFILES.values():
            counts = Counter(r["kind"] for r in p.provenance())
            click.echo(f"{p.name:16} {p.description}")
            click.echo(f"{'':16} " + ", ".join(f"{counts[k]} {k}" for k in SOURCE_KINDS
                                                 if counts[k]))
        return
    prof = get_profile(name.lower())
    rows = [r for r in prof.provenance() if not wanted or r["kind"] in wanted]
    if as_json:
        click.echo(json.dumps({"name": prof.name, "description": prof.description,
                               "calibrated_on": list(prof.calibrated_on), "constants": rows},
                              indent=1))
        return
    click.echo(f"{prof.name}: {prof.description}")
    for cell in prof.calibrated_on:
        click.echo(f"  calibrated on: {cell}")
    if not rows:
        click.echo(f"  no constant of {prof.name} has a source of kind "
                   f"{' or '.join(sorted(wanted))}")
    for r in rows:
        value = "none" if r["value"] is None else f"{r['value']:.6g}"
        click.echo(f"\n  {r['constant']} = {value}  [{r['kind']}]  ({r['unit']})")
        click.echo(f"      {r['source']}")


@main.command(name="runs")
@click.argument("paper", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@_store_option
@_user_errors
def runs_cmd(paper: str | None, as_json: bool, store_path: Path | None) -> None:
    """List the stored runs (of PAPER), oldest first: id, experiment, start, status, and whether
    the run used the paper's configuration (only those are compared by `minidb report`)."""
    import json

    from minidb.experiments.reproduce import stored_runs

    store = _open_store(store_path)
    found = stored_runs(store, paper)
    if as_json:
        click.echo(json.dumps(found, default=str, indent=1))
        return
    if not found:
        click.echo(f"no runs{f' of {paper}' if paper else ''} in {store.path}; `minidb list` "
                   f"shows the experiments, `minidb reproduce PAPER --quick` runs a paper's")
        return
    click.echo(_runs_table(found))
    click.echo(f"{len(found)} run(s) in {store.path}; paper config 'yes': compared by "
               f"`minidb report`, 'no': exploratory, '?': experiment no longer registered")


def _runs_table(runs: list[dict]) -> str:
    """One line per run under a header of named columns."""
    shown = {True: "yes", False: "no", None: "?"}
    lines = [f"{'run id':28} {'experiment':26} {'started (UTC)':19} {'status':11} "
             f"{'seconds':>8}  paper config"]
    for r in runs:
        seconds = "-" if r["duration_s"] is None else f"{r['duration_s']:.1f}"
        lines.append(f"{r['run_id']:28} {r['experiment']:26} {r['started_at']:%Y-%m-%d %H:%M:%S} "
                     f"{r['status']:11} {seconds:>8}  {shown[r['paper_configuration']]}")
        if r["error"]:
            lines.append(f"{'':28} error: {r['error']}")
    return "\n".join(lines)


@main.command()
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True,
              help="Port to serve on.")
@click.option("--headless", is_flag=True, help="Do not open a browser.")
@_store_option
@_user_errors
def app(port: int, headless: bool, store_path: Path | None) -> None:
    """Start the Streamlit explorer (app/Home.py) on the results store."""
    import os

    home = Path(__file__).resolve().parents[1] / "app" / "Home.py"
    if not home.is_file():
        raise MinidbError(f"the explorer is not here ({home}); it ships with the source checkout")
    try:
        import streamlit  # noqa: F401
    except ImportError:
        raise MinidbError("the explorer needs streamlit: pip install -e '.[app]'") from None
    env = dict(os.environ)
    if store_path is not None:
        env["MINIDB_RESULTS"] = str(store_path)
    command = [sys.executable, "-m", "streamlit", "run", str(home), "--server.port", str(port),
               "--browser.gatherUsageStats", "false"]
    if headless:
        command += ["--server.headless", "true"]
    sys.exit(serve(command, env))


#: seconds Streamlit has to stop after ``minidb app`` is told to stop, before it is killed
APP_STOP_GRACE_S = 10.0


def _die_with_parent() -> None:
    """In the child, before it runs Streamlit (Linux): ask the kernel for SIGTERM when the
    parent dies, so that even ``kill -9`` of ``minidb app`` leaves no server behind."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def serve(command: list[str], env: dict[str, str] | None = None,
          grace_s: float = APP_STOP_GRACE_S) -> int:
    """Run ``command`` (the Streamlit server) until it exits, and stop it with us.

    The server runs in its own process group. SIGINT (Ctrl-C), SIGTERM and SIGHUP sent to this
    process are passed on to that whole group as SIGTERM; what is still running ``grace_s``
    seconds later is killed, so stopping ``minidb app`` never leaves an orphan server holding
    the port; on Linux the server also gets SIGTERM if this process is killed outright
    (``_die_with_parent``). Returns the server's exit status, or 128 + the signal's number when a signal
    stopped it."""
    import os
    import signal
    import subprocess

    child = subprocess.Popen(command, env=env, start_new_session=True,
                             preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    received: list[int] = []

    def to_group(sig: int) -> None:
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(signum: int, _frame: object) -> None:
        received.append(signum)
        to_group(signal.SIGTERM)

    handled = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    previous = {sig: signal.signal(sig, stop) for sig in handled}
    try:
        deadline = None
        while True:
            try:
                status = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if received and deadline is None:
                    deadline = time.monotonic() + grace_s
                if deadline is not None and time.monotonic() > deadline:
                    to_group(signal.SIGKILL)
    finally:
        if child.poll() is None:  # an exception of our own: never leave the server behind
            to_group(signal.SIGKILL)
            child.wait()
        to_group(signal.SIGKILL)  # whatever the server started and left in its group
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 + received[0] if received else status


if __name__ == "__main__":  # pragma: no cover
    main()
