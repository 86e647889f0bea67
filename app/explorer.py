"""The explorer's logic: what the Streamlit pages show, computed without Streamlit.

The pages (``Home.py`` and ``pages/*.py``) only draw widgets and hand the user's choices to the
functions here. These read the results store (``minidb.results.ResultsStore``) and the experiment
registry (``minidb.experiments``) and return plain values, pandas tables and Altair charts, so
they can be tested with pytest and reused from a notebook (put ``app/`` on ``sys.path``).

What each page needs:

* Home: ``papers_summary`` (which papers have stored runs) and ``reproduce_quickly``.
* Published vs reproduced: ``published_cells`` -> ``cells_frame`` -> ``style_cells`` (the paper's
  numbers beside the latest run's, red beyond a factor of 2); ``curve_frame``,
  ``published_points`` and ``ideal_line`` -> ``curve_chart`` (response time or speedup against
  nodes or page size, the paper's points, the linear ideal); ``pivot_frame`` (the run's table).
* Run: ``parameter_specs`` (one widget per parameter the experiment takes), ``BarProgress`` (the
  experiment's ``Progress`` on a Streamlit progress bar), ``run_configuration``, ``rows_frame``.
* Compare runs: ``default_pair``, ``run_label``, ``parameter_diff``, ``compare_runs`` (rows paired
  on ``JOIN_KEYS``), ``changed`` / ``style_comparison``.
* Findings: ``findings_counts`` over ``minidb.experiments.reproduce.build_report``.
* Volcano tuning: ``volcano_steps_frame`` (one line per tuning step, variant and disk count, the
  paper's numbers matched in) and the table, summary and chart functions after it.

Simplifications: the x axis of a chart is read from the column slugs of the rows (``nodes_4``,
``page_8kb``, ``gamma_100000``, ``vlx_f16``); slugs of another shape are shown in tables only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from minidb import plugins
from minidb.errors import MinidbError
from minidb.experiments import PAPERS, Experiment, Progress, experiments
from minidb.experiments.reproduce import PaperReport, mark_calibration, reproduce, run_and_store
from minidb.results import STORE_ENV, ResultsStore, default_store_path

# ----------------------------------------------------------------------------------- the store


def initial_store_path() -> str:
    """The store the explorer opens first: ``$MINIDB_RESULTS`` or the user's cache file."""
    return str(default_store_path())


def open_store(path: str | os.PathLike, create: bool = False) -> ResultsStore | None:
    """The results store at ``path``; None when there is no file there and ``create`` is
    False (pages that only read do not leave empty stores behind a mistyped path)."""
    path = Path(path).expanduser()
    if not create and not path.exists():  # a directory is no missing store: say what it is
        return None
    return ResultsStore(path)


def store_hint(path: str | os.PathLike) -> str:
    """What to do when there is no store at ``path`` yet (one line)."""
    return (f"No results store at {path} yet: run an experiment on the Run page, click "
            f"'Reproduce' on Home, or run `MINIDB_RESULTS={path} minidb reproduce gamma --quick`"
            f" (set {STORE_ENV} or the sidebar path to use another store).")


def papers_with_experiments() -> list[str]:
    """Papers that have registered experiments, in the order of ``PAPERS``."""
    have = {e.paper for e in experiments()}
    return [p for p in PAPERS if p in have]


def linked_choice(experiment: str | None, reference: str | None
                  ) -> tuple[Experiment, str | None] | None:
    """The experiment (and table or figure) a page link names in its query string, e.g.
    ``?experiment=gamma.page_size&reference=Figure 6``; None when it names no known one."""
    if not experiment:
        return None
    found = {e.name: e for e in experiments()}.get(experiment)
    if found is None:
        return None
    return found, (reference if reference in found.references else None)


def papers_summary(store: ResultsStore | None) -> pd.DataFrame:
    """One line per paper with stored runs: how many runs, of which experiments, and when."""
    columns = ["paper", "title", "ok runs", "failed runs", "experiments", "last run (UTC)"]
    lines = []
    for run_paper in PAPERS:
        runs = store.runs(paper=run_paper) if store is not None else []
        if not runs:
            continue
        ok = [r for r in runs if r["status"] == "ok"]
        lines.append({
            "paper": run_paper, "title": PAPERS[run_paper], "ok runs": len(ok),
            "failed runs": sum(r["status"] == "failed" for r in runs),
            "experiments": ", ".join(sorted({r["experiment"] for r in ok})) or "-",
            "last run (UTC)": max(r["started_at"] for r in runs).strftime("%Y-%m-%d %H:%M"),
        })
    return pd.DataFrame(lines, columns=columns)


# ----------------------------------------------------------------------------------- progress


class BarProgress(Progress):
    """An experiment's progress reported to ``update(fraction, text)``.

    The pages pass the ``progress`` method of a ``st.progress`` element, so a run shows a bar
    that fills as the experiment finishes its steps (node counts, page sizes, relation sizes).
    ``prefix`` names what runs when several experiments share one bar.
    """

    def __init__(self, update: Callable[[float, str], Any], prefix: str = "") -> None:
        self.update = update
        self.prefix = prefix
        self.total = 0
        self.done = 0

    def _text(self, label: str) -> str:
        steps = f"{self.done}/{self.total}" if self.total else ""
        return " ".join(part for part in (self.prefix, steps, label) if part)

    def start(self, total: int, label: str = "") -> None:
        self.total, self.done = max(0, int(total)), 0
        self.update(0.0, self._text(label or "starting"))

    def advance(self, label: str = "") -> None:
        self.done += 1
        fraction = min(1.0, self.done / self.total) if self.total else 1.0
        self.update(fraction, self._text(label))


def run_configuration(exp: Experiment, store: ResultsStore, values: Mapping[str, Any],
                      progress: Progress | None = None) -> tuple[str, list[dict]]:
    """Run ``exp`` with the parameter values chosen on the Run page, stored as one new run;
    returns (run id, rows). A parameter it does not take is an ``ExperimentError``; a run that
    raises is recorded as failed and the error propagates."""
    for kind, parameter in PLUGIN_PARAMETERS.items():
        spec = values.get(parameter)
        origin = plugin_origin(spec, kind) if isinstance(spec, str) else None
        if origin and values.get("backend") == "ray":
            raise PluginFileError(f"{spec} was loaded from {origin} into the explorer only; "
                                  f"Ray's node processes do not have it: choose the inline "
                                  f"backend")
    return run_and_store(exp, store, dict(values), quick=False, progress=progress)


def reproduce_quickly(paper: str, store: ResultsStore,
                      progress_for: Callable[[Experiment], Progress] | None = None
                      ) -> list[tuple[str, str, int]]:
    """``minidb reproduce PAPER --quick``: every experiment of ``paper`` at its quick settings,
    stored as one run each; returns (experiment, run id, number of rows) per experiment."""
    return reproduce(paper, store, quick=True, progress_for=progress_for)


# ----------------------------------------------------------------------------------- run page


@dataclass(frozen=True)
class ParameterSpec:
    """How the Run page asks for one parameter of an experiment."""

    name: str
    widget: str
    """``number`` (int or float), ``multiselect``, ``select``, ``checkbox`` or ``text``."""
    default: Any
    """The value the widget starts from (the experiment's quick setting)."""
    paper: Any
    """The experiment's default, i.e. the paper's configuration."""
    options: tuple = ()
    help: str = ""


PARAMETER_HELP = {
    "scale": "relation sizes are multiplied by this; 1.0 is the paper's size",
    "nodes": "number of disk nodes (a list: one configuration per count)",
    "partitions": "number of partitions, one processor and disc each",
    "page_sizes": "disk page sizes to measure, one configuration each",
    "sizes": "relation sizes in tuples at scale 1.0",
    "systems": "which machines of the paper to model",
    "machines": "which Tandem processors to model (VLX, CLX)",
    "profile": "hardware profile that turns counted work into modeled seconds",
    "partitioner": "how tuples are declustered over the nodes",
    "buffer_policy": "which page each node's buffer pool replaces (a registered policy)",
    "backend": "inline (one process) or ray (one actor per node); same counters either way",
    "seed": "seed of the data generator",
    "similar": "scale the fixed startup costs with the data (see minidb.experiments.tandem)",
    "millions": "LH* file sizes in millions of entries at scale 1.0 (8 MB per million)",
    "fixed_nodes": "server nodes of the LH* paper's growing-file experiment (its 8)",
    "per_node_millions": "millions of entries per node in the constant-load experiment",
    "ratio_nodes": "node counts of the constant-load experiment (one configuration each)",
    "operations": "LH* inserts and lookups by the stale clients",
    "clients": "LH* clients, each with its own image",
    "servers": "LH* server machines the buckets are mapped to",
    "addressing": "LH* addressing rules the files run (minidb's, or a student's from Lab 4)",
    "shares": "memory for hash tables, in percent of what the build relation needs (one "
              "configuration each)",
    "algorithms": "join algorithms to compare (registered join plug-ins, a student's too)",
}

PAGE_SIZE_CHOICES = (1024, 2048, 4096, 8192, 16384, 32768, 65536)
BACKENDS = ("inline", "ray")
#: declusterings offered for the Wisconsin relations (the experiments take a partitioning spec);
#: the paper's is hash(unique1); a student's registered partitioner is typed the same way
PARTITIONER_CHOICES = ("hash(unique1)", "round_robin", "range_uniform(unique1)", "hash(unique2)",
                       "range_uniform(unique2)")


class PluginFileError(MinidbError):
    """A plug-in file the Run page cannot load (missing, not Python, fails on import, registers
    nothing); the message says what to change."""


#: kinds of plug-in an experiment of the explorer can take, and the parameter that selects it
PLUGIN_PARAMETERS = {"partitioner": "partitioner", "buffer_policy": "buffer_policy",
                     "commit": "protocols"}
#: where each plug-in loaded from a file came from: (kind, name) -> path
LOADED_PLUGINS: dict[tuple[str, str], str] = {}


def _registered() -> dict[tuple[str, str], Any]:
    for kind in PLUGIN_PARAMETERS:
        plugins.names(kind)  # imports the built-ins, so they never count as the file's
    return {(kind, name): cls for kind, known in plugins._REGISTRY.items()
            for name, cls in known.items()}


def load_plugin_file(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Import the Python file at ``path`` (importlib) and return the (kind, name) of every
    plug-in it registers with ``@register``; they then appear among the choices of the Run page
    (``partitioner_choices``). Raises ``PluginFileError`` with a one-line reason for a path that
    is empty, missing, a folder or not ``.py``, a file that fails to import, or one that
    registers nothing."""
    text = str(path).strip()
    if not text:
        raise PluginFileError("type the path of a .py file that registers a plug-in")
    file = Path(text).expanduser()
    if not file.exists():
        raise PluginFileError(f"no file at {file}: check the path (it is read on the machine "
                              f"that runs the explorer)")
    if file.is_dir():
        raise PluginFileError(f"{file} is a folder: give the .py file that registers the plug-in")
    if file.suffix != ".py":
        raise PluginFileError(f"{file} is not a Python file: the plug-in must be a .py file")
    file = file.resolve()
    before = _registered()
    module_name = "minidb_user_plugin_" + hashlib.sha1(str(file).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise PluginFileError(f"{file} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        sys.modules.pop(module_name, None)
        raise PluginFileError(f"{file.name}, line {err.lineno}: syntax error: {err.msg}") from None
    except Exception as err:  # the student's code: any error is reported in one line
        sys.modules.pop(module_name, None)
        raise PluginFileError(f"importing {file.name} failed: {type(err).__name__}: {err}"
                              ) from None
    after = _registered()
    new = sorted(key for key, cls in after.items() if before.get(key) is not cls)
    if not new:
        raise PluginFileError(
            f"{file.name} registers no plug-in: decorate a class with "
            f"@register(\"partitioner\", \"my_name\") (from minidb.plugins import register)")
    for key in new:
        LOADED_PLUGINS[key] = str(file)
    return new


def _takes_columns(cls: Any) -> bool:
    """Whether a partitioner class is built with column names (``name(unique1)``)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
               for p in parameters)


def partitioner_choices() -> tuple[str, ...]:
    """The declusterings the Run page offers: the built-in choices, then every other registered
    partitioner (a student's, from ``load_plugin_file`` or imported code) on unique1."""
    extra = []
    for name in plugins.names("partitioner"):
        if name in ("range", "predicates"):  # need boundaries or predicates, not a column
            continue
        cls = plugins.lookup("partitioner", name)
        spec = f"{name}(unique1)" if _takes_columns(cls) else name
        if spec not in PARTITIONER_CHOICES:
            extra.append(spec)
    return (*PARTITIONER_CHOICES, *extra)


def plugin_origin(spec: str, kind: str = "partitioner") -> str | None:
    """The file the plug-in of ``kind`` a spec names was loaded from (None for the others)."""
    name = spec.split("(")[0].strip().lower()
    return LOADED_PLUGINS.get((kind, name))


def takes_plugin(exp: Experiment) -> bool:
    """Whether ``exp`` takes a partitioner, a buffer policy or a commit protocol the Run page
    can offer."""
    return any(parameter in exp.defaults for parameter in PLUGIN_PARAMETERS.values())


def builtin_plugins(exp: Experiment) -> dict[str, Any]:
    """The paper's choice of each plug-in parameter ``exp`` takes (``hash(unique1)``, ``lru``)."""
    return {parameter: exp.defaults[parameter] for parameter in PLUGIN_PARAMETERS.values()
            if parameter in exp.defaults}


def _choices(name: str) -> tuple | None:
    """Named choices for parameters that select from a fixed set, else None."""
    if name == "profile":
        from minidb.cost.profiles import profile_names

        return tuple(profile_names())
    if name == "partitioner":
        return partitioner_choices()
    if name == "buffer_policy":
        return tuple(plugins.names("buffer_policy"))
    if name == "backend":
        return BACKENDS
    if name == "addressing":
        return tuple(plugins.names("lhstar_addressing"))
    if name == "protocols":  # ingres.commit_protocols: every protocol, or one
        return ("all", *plugins.names("commit"))
    return None


def parameter_specs(exp: Experiment) -> list[ParameterSpec]:
    """One spec per parameter ``exp`` takes, starting from its quick settings."""
    quick = exp.parameters(quick=True)
    specs = []
    for name, paper in exp.defaults.items():
        start = quick[name]
        hint = PARAMETER_HELP.get(name, "")
        choices = _choices(name)
        if isinstance(paper, bool):
            specs.append(ParameterSpec(name, "checkbox", start, paper, (), hint))
        elif choices is not None:
            options = tuple(dict.fromkeys((*choices, start)))
            specs.append(ParameterSpec(name, "select", start, paper, options, hint))
        elif isinstance(paper, list):
            if name == "page_sizes":
                base: Iterable = PAGE_SIZE_CHOICES
            elif name in ("nodes", "partitions"):
                base = range(1, 17)
            else:
                base = ()
            options = tuple(sorted(set(base) | set(paper) | set(start),
                                   key=lambda v: (str(type(v)), v)))
            specs.append(ParameterSpec(name, "multiselect", list(start), paper, options, hint))
        elif isinstance(paper, int | float):
            specs.append(ParameterSpec(name, "number", start, paper, (), hint))
        else:
            specs.append(ParameterSpec(name, "text", str(start), paper, (), hint))
    return specs


def takes_partitioner(exp: Experiment) -> bool:
    return "partitioner" in exp.defaults


def parameters_frame(exp: Experiment) -> pd.DataFrame:
    """The parameters ``exp`` takes: the paper's value, the quick value and what it means."""
    quick = exp.parameters(quick=True)
    return pd.DataFrame([{"parameter": k, "paper": _show(v), "quick": _show(quick[k]),
                          "meaning": PARAMETER_HELP.get(k, "")} for k, v in exp.defaults.items()])


def format_option(name: str, value: Any) -> str:
    """How a widget shows one option of parameter ``name``."""
    if name == "page_sizes" and isinstance(value, int):
        return f"{value // 1024} KB" if value >= 1024 else f"{value} B"
    if name == "sizes" and isinstance(value, int):
        return f"{value:,} tuples"
    return str(value)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def rows_frame(rows: list[dict]) -> pd.DataFrame:
    """An experiment's rows as a table (parameters as compact JSON text)."""
    columns = ["reference", "row", "column", "metric", "value", "unit", "clock", "parameters"]
    frame = pd.DataFrame([{k: r.get(k) for k in columns} for r in rows], columns=columns)
    frame["parameters"] = frame["parameters"].map(_json_text)
    return frame


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value or {}, sort_keys=True, separators=(",", ":"), default=str)


def decoded(parameters: Any) -> dict:
    """Row or run parameters as a dict (the store may hand JSON text or a dict)."""
    if isinstance(parameters, str):
        return json.loads(parameters) if parameters else {}
    return dict(parameters or {})


# --------------------------------------------------------------------- published vs reproduced

NUMBERED = ("ok", "prose")
"""Reference cells that carry a number (the others are shapes or unreadable)."""


def published_cells(store: ResultsStore, paper: str, reference: str,
                    exp: Experiment | None = None) -> list[dict]:
    """The paper's numbered cells of ``reference`` beside the latest reproduced values (modeled
    clock). With ``exp``, cells reproduced by another experiment are left out, and so are cells
    of metrics ``exp`` does not produce (when it has stored rows)."""
    cells = mark_calibration([c for c in store.compare(paper)
                              if c["reference"] == reference and c.get("status") in NUMBERED
                              and c.get("clock") in ("modeled", None)])
    if exp is None:
        return cells
    rows = store.rows(experiment=exp.name)
    metrics = {r["metric"] for r in rows}
    if "response_time" in metrics:
        metrics.add("slowdown")  # derived from two response times (``derive_versus_cells``)
    kept = [c for c in cells
            if (c.get("experiment") == exp.name)
            or (c.get("experiment") is None and (not metrics or c["metric"] in metrics))]
    return derive_versus_cells(kept, [r for r in rows if r.get("reference")])


_VERSUS = re.compile(r"^(?P<head>[a-z]+)_(?P<left>[^_]+)_vs_(?P<right>[^_]+)_(?P<tail>.+)$")


def versus_rows(row: str) -> tuple[str, str] | None:
    """The two queries a comparison cell names: ``select_10pct_vs_0pct_nonindexed`` ->
    (``select_10pct_nonindexed``, ``select_0pct_nonindexed``); None for other rows."""
    found = _VERSUS.match(row)
    if not found:
        return None
    head, tail = found["head"], found["tail"]
    return f"{head}_{found['left']}_{tail}", f"{head}_{found['right']}_{tail}"


def derive_versus_cells(cells: list[dict], rows: list[dict]) -> list[dict]:
    """Fill the reproduced value of the paper's comparison cells (metric ``slowdown`` in
    percent, row ``A_vs_B``) that no experiment stores: 100 * (time of A / time of B - 1), from
    ``rows`` (the latest run's modeled response times, same column). Other cells unchanged."""
    times = {(r["row"], r["column"]): r["value"] for r in rows
             if r["metric"] == "response_time" and r["clock"] == "modeled"}
    out = []
    for c in cells:
        pair = versus_rows(c["row"]) if c["metric"] == "slowdown" else None
        if pair and c.get("reproduced") is None:
            a, b = (times.get((q, c["column"])) for q in pair)
            if a is not None and b:
                value = 100.0 * (a / b - 1.0)
                published = c.get("published")
                ratio = value / published if published else None
                c = {**c, "reproduced": value, "reproduced_unit": "percent", "ratio": ratio,
                     "within_2x": None if ratio is None else 0.5 <= ratio <= 2.0,
                     "note": (f"derived from {pair[0]} / {pair[1]} response times. "
                              + (c.get("note") or ""))}
        out.append(c)
    return out


def published_numbers_sentence(cells: list[dict], reference: str, limit: int = 6) -> str:
    """One sentence, written from the reference data, saying which numbers the paper prints
    for ``reference`` (or that it prints none); up to ``limit`` of them are named."""
    numbered = [c for c in cells if c.get("published") is not None]
    if not numbered:
        return (f"The paper prints no numbers for {reference}, only what its curves do (see "
                f"the notes at the bottom of the page).")
    counted = (f"The paper prints {len(numbered)} number{'s' if len(numbered) > 1 else ''} "
               f"for {reference}")
    if len(numbered) > limit:
        return counted + " (all in the table below)."
    bits = [f"{c['row']} at {c['column']}: {_num(c['published'])} "
            f"{c.get('published_unit') or ''} ({c['metric']})".replace("  ", " ")
            for c in numbered]
    return counted + ": " + "; ".join(bits) + "."


def cells_frame(cells: list[dict]) -> pd.DataFrame:
    """Reproduced vs published, one cell per line, reproduced cells first."""
    columns = ["row", "column", "metric", "reproduced", "published", "ratio", "within 2x",
               "unit", "note"]
    lines = [{"row": c["row"], "column": c["column"], "metric": c["metric"],
              "reproduced": c.get("reproduced"), "published": c.get("published"),
              "ratio": c.get("ratio"),
              "within 2x": None if c.get("within_2x") is None else bool(c["within_2x"]),
              "unit": c.get("published_unit") or c.get("reproduced_unit") or "",
              "note": ("calibration: a model constant was derived from this cell. "
                       if c.get("calibration") else "") + (c.get("note") or "")}
             for c in cells]
    frame = pd.DataFrame(lines, columns=columns)
    if len(frame):
        frame = frame.sort_values(["reproduced", "row", "column"], key=_missing_last,
                                  na_position="last", kind="stable").reset_index(drop=True)
    return frame


def _missing_last(series: pd.Series) -> pd.Series:
    return series.isna() if series.name == "reproduced" else series


OUTSIDE_2X = "background-color: #f8d7da; color: #58151c"
NOT_REPRODUCED = "color: #8a8a8a"


def not_reproduced(frame: pd.DataFrame) -> pd.Series:
    """Cells of ``cells_frame`` that no row of the run reproduces. A row that stored NaN does
    reproduce its cell, badly: its ratio is NaN and it is not within 2x (False, not None)."""
    return frame["reproduced"].isna() & frame["within 2x"].isna()


def style_cells(frame: pd.DataFrame):
    """Cells off by more than a factor of 2 (or reproduced as NaN) in red, cells not
    reproduced in grey and shown as "-"."""
    missing = not_reproduced(frame)

    def line_style(line: pd.Series) -> list[str]:
        if missing.loc[line.name]:
            style = NOT_REPRODUCED
        elif pd.notna(line["within 2x"]) and not bool(line["within 2x"]):
            style = OUTSIDE_2X
        else:
            style = ""
        return [style] * len(line)

    styler = frame.style.apply(line_style, axis=1).format(
        {"reproduced": _stored, "published": _num, "ratio": _num})
    if missing.any():
        styler = styler.format(lambda _: "-", subset=pd.IndexSlice[frame.index[missing],
                                                                   ["reproduced"]])
    return styler


def _num(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def shape_notes(store: ResultsStore, paper: str, reference: str) -> list[str]:
    """What the paper says in words about ``reference`` (its shape and prose cells)."""
    notes = []
    for c in store.reference(paper):
        if c["reference"] == reference and c["status"] in ("shape", "prose") and c.get("note"):
            what = c["row"] if c["column"] in ("curve", "na") else f"{c['row']} at {c['column']}"
            notes.append(f"{what} ({c['metric']}): {c['note']}")
    return notes


# axis name of the column slug family; ``scaling`` marks axes where linear speedup is ideal
@dataclass(frozen=True)
class Axis:
    title: str
    scaling: bool = False


AXES = {
    "nodes": Axis("disk nodes", scaling=True),
    "page": Axis("page size (KB)"),
    "gamma": Axis("relation size (tuples)"),
    "teradata": Axis("relation size (tuples)"),
    "vlx_f": Axis("partitions", scaling=True),
    "clx_f": Axis("partitions", scaling=True),
    "vlx_g": Axis("partitions", scaling=True),
    "clx_g": Axis("partitions", scaling=True),
    "entries": Axis("file size (million entries)"),
    "servers": Axis("server nodes"),
    "memory": Axis("memory for hash tables (% of the build relation)"),
    "disks": Axis("disks (one process each)", scaling=True),
}
_SLUG = re.compile(r"^(?P<family>[a-z][a-z_]*?)_?(?P<number>\d+)(?P<unit>kb)?"
                   r"(?:_(?:time|total_lock|total_wait))?$")  # Volcano Table II: disks_8_time
#: the LH* paper's tables are the other way round: a row per configuration (``entries_6m``,
#: ``nodes_8_entries_1m``), a column per query
_CONFIGURATION_ROW = re.compile(r"^(?:nodes_(?P<nodes>\d+)_)?entries_(?P<entries>\d+(?:\.\d+)?)m$")


def column_position(slug: str) -> tuple[str, float] | None:
    """(family, x) for a column slug: ``nodes_4`` -> ("nodes", 4), ``page_8kb`` -> ("page", 8),
    ``vlx_f16`` -> ("vlx_f", 16), ``disks_8_time`` -> ("disks", 8); None for slugs that are no
    point on an axis."""
    found = _SLUG.match(slug)
    if not found:
        return None
    return found["family"], float(found["number"])


def axis_title(families: Iterable[str]) -> str:
    titles = {AXES[f].title if f in AXES else f for f in families}
    return " / ".join(sorted(titles)) or "column"


def _series(row: str, family: str) -> str:
    """A curve's name: the query, plus the machine when the column names one."""
    return row if family in ("nodes", "page") else f"{row} ({family.split('_')[0]})"


def experiment_rows(store: ResultsStore, exp: Experiment) -> list[dict]:
    """The rows of ``exp``'s latest ok run (empty when it never ran)."""
    return store.rows(experiment=exp.name)


def metrics_of(rows: list[dict], clock: str = "modeled") -> list[str]:
    """Metrics of ``rows`` worth plotting (flags left out), most frequent first."""
    counts: dict[str, int] = {}
    for r in rows:
        if r["clock"] == clock and r.get("unit") != "flag":
            counts[r["metric"]] = counts.get(r["metric"], 0) + 1
    return sorted(counts, key=lambda m: -counts[m])


def reference_metric(store: ResultsStore, paper: str, reference: str,
                     candidates: list[str]) -> str | None:
    """The metric the paper's ``reference`` is about, among ``candidates``."""
    counts: dict[str, int] = {}
    for c in store.reference(paper):
        if c["reference"] == reference and c["metric"] in candidates:
            counts[c["metric"]] = counts.get(c["metric"], 0) + 1
    if not counts:
        return candidates[0] if candidates else None
    return max(counts, key=lambda m: counts[m])


def reference_rows(store: ResultsStore, paper: str, reference: str, rows: list[dict],
                   metric: str) -> list[str]:
    """Row slugs (queries) that belong to ``reference``: rows the run stored under it, and rows
    the paper names for it with ``metric``; every row of ``metric`` when neither names any."""
    have = [r["row"] for r in rows if r["metric"] == metric]
    named = {r["row"] for r in rows if r["reference"] == reference and r["metric"] == metric}
    named |= {c["row"] for c in store.reference(paper)
              if c["reference"] == reference and c["metric"] == metric}
    chosen = [r for r in dict.fromkeys(have) if r in named]
    return chosen or list(dict.fromkeys(have))


def configuration_points(cells: Iterable[dict]) -> list[dict]:
    """Cells of a table with a row per configuration (the LH* paper's) as curve points: one
    series per column (query), x the server nodes when the rows vary them, else the file size
    in million entries. Cells whose row names no configuration are left out."""
    found = []
    for c in cells:
        m = _CONFIGURATION_ROW.match(c["row"])
        if m is not None:
            found.append((c, int(m["nodes"]) if m["nodes"] else None, float(m["entries"])))
    nodes = {n for _, n, _ in found}
    by_nodes = len(nodes) > 1 and None not in nodes
    # transposed to the other tables' shape: the query is the row (a curve), the configuration
    # the column (a point on it)
    return [{**c, "series": c["column"], "row": c["column"], "column": c["row"],
             "family": "servers" if by_nodes else "entries",
             "x": float(n) if by_nodes else e} for c, n, e in found]


def curve_frame(rows: list[dict], metric: str, clock: str = "modeled",
                row_names: Iterable[str] | None = None) -> pd.DataFrame:
    """Points of the reproduced curves: series, row, column, family, x, value, unit."""
    wanted = set(row_names) if row_names is not None else None
    points, by_row = [], []
    for r in rows:
        if r["metric"] != metric or r["clock"] != clock:
            continue
        if wanted is not None and r["row"] not in wanted:
            continue
        position = column_position(r["column"])
        if _CONFIGURATION_ROW.match(r["row"]):
            by_row.append(r)
            continue
        if position is None:
            continue
        family, x = position
        points.append({"series": _series(r["row"], family), "row": r["row"],
                       "column": r["column"], "family": family, "x": x,
                       "value": r["value"], "unit": r.get("unit", "")})
    if not points:
        points = [{k: p[k] for k in ("series", "row", "column", "family", "x", "value")}
                  | {"unit": p.get("unit", "")} for p in configuration_points(by_row)]
    columns = ["series", "row", "column", "family", "x", "value", "unit"]
    return pd.DataFrame(points, columns=columns).sort_values(["series", "x"]).reset_index(
        drop=True)


def published_points(store: ResultsStore, paper: str, curves: pd.DataFrame,
                     metric: str) -> pd.DataFrame:
    """The paper's numbers that fall on the plotted curves: cells of any of its tables or
    figures with the same row, metric and kind of column (its prose points included)."""
    columns = ["series", "row", "column", "x", "value", "reference", "source", "note"]
    if curves.empty:
        return pd.DataFrame(columns=columns)
    if set(curves["family"]) <= {"entries", "servers"}:  # a row per configuration (LH*)
        cells = [c for c in store.reference(paper)
                 if c["metric"] == metric and c["status"] in NUMBERED
                 and c.get("value") is not None and c["row"] in set(curves["column"])
                 and c["column"] in set(curves["row"])]
        points = [{k: p[k] for k in ("series", "row", "column", "x", "value", "reference",
                                     "family")}
                  | {"source": p.get("source") or "", "note": p.get("note") or ""}
                  for p in configuration_points(cells)]
        return pd.DataFrame(points, columns=[*columns, "family"])
    plotted = {(r, f) for r, f in zip(curves["row"], curves["family"], strict=True)}
    points = []
    for c in store.reference(paper):
        if c["metric"] != metric or c["status"] not in NUMBERED or c.get("value") is None:
            continue
        position = column_position(c["column"])
        if position is None or (c["row"], position[0]) not in plotted:
            continue
        points.append({"series": _series(c["row"], position[0]), "row": c["row"],
                       "column": c["column"], "x": position[1], "value": c["value"],
                       "reference": c["reference"], "source": c.get("source") or "",
                       "note": c.get("note") or ""})
    return pd.DataFrame(points, columns=columns)


def ideal_line(curves: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The ideal a speedup or scaleup curve is judged against, per column family on a
    node-count axis: linear speedup from the smallest configuration (``s0 * n / n0``), or a
    flat scaleup. Empty for other metrics and axes."""
    if curves.empty or metric not in ("speedup", "scaleup"):
        return pd.DataFrame(columns=["family", "x", "value"])
    lines = []
    for family, points in curves.groupby("family"):
        if family not in AXES or not AXES[family].scaling:
            continue
        xs = sorted(points["x"].unique())
        x0 = xs[0]
        s0 = float(points.loc[points["x"] == x0, "value"].mean())
        for x in xs:
            lines.append({"family": family, "x": x,
                          "value": s0 * x / x0 if metric == "speedup" else s0})
    return pd.DataFrame(lines, columns=["family", "x", "value"])


#: the plot area of one chart panel (pixels, legend and axes not included)
PANEL_WIDTH = 340
PANEL_HEIGHT = 280
#: the legend sits below the panels, its entries in this many columns
LEGEND_COLUMNS = 3
#: the chart keeps its panels' size and grows around them for axes and legends; without it
#: Streamlit fits a single-panel chart, legend included, into width x height (Table 1's plot
#: area shrank to about 15 pixels under its 12-entry legend)
PAD = alt.AutoSizeParams(type="pad", contains="padding")
#: a y axis whose values span this factor or more is drawn on a log scale
LOG_SPAN = 30.0


def finite_points(frame: pd.DataFrame) -> pd.DataFrame:
    """The lines of a chart's frame whose ``value`` can be drawn: a NaN or infinite value has
    no place on an axis (an infinite one would stretch it to nothing); the tables show them."""
    values = pd.to_numeric(frame["value"], errors="coerce").astype(float)
    return frame[values.abs() < math.inf]


def _log_scale(values: pd.Series) -> bool:
    """Whether positive ``values`` span decades (``LOG_SPAN`` or more): then a log axis keeps
    the small ones readable. NaN and infinite values are left out."""
    values = values[values.abs() < math.inf]
    return bool(len(values)) and float(values.min()) > 0 and (
        float(values.max()) / float(values.min()) >= LOG_SPAN)


PANEL_TITLES = {"gamma": "Gamma", "teradata": "Teradata DBC/1012", "vlx_f": "Tandem VLX",
                "clx_f": "Tandem CLX", "vlx_g": "Tandem VLX", "clx_g": "Tandem CLX"}


def panel_title(family: str) -> str:
    """A chart panel's title: the machine a column family names (``gamma_100000`` -> Gamma,
    ``vlx_f16`` -> Tandem VLX), else the family itself."""
    return PANEL_TITLES.get(family, family)


#: panels side by side before the next row starts (two fit a laptop's wide Streamlit page)
PANELS_PER_ROW = 2


def _panels(panels: list) -> alt.TopLevelMixin:
    """One panel alone, or the panels in rows of ``PANELS_PER_ROW`` sharing their y scale and
    legends; sized ``PAD`` (see there)."""
    if len(panels) == 1:
        return panels[0].properties(autosize=PAD)
    return alt.concat(*panels, columns=PANELS_PER_ROW).resolve_scale(y="shared").properties(
        autosize=PAD)


def category_frame(rows: list[dict], metric: str, clock: str = "modeled",
                   row_names: Iterable[str] | None = None) -> pd.DataFrame:
    """A table whose columns are not an axis (Distributed INGRES's user / system / elapsed time
    per configuration): one bar per row and column, with its unit."""
    wanted = set(row_names) if row_names is not None else None
    bars = [{"row": r["row"], "column": r["column"], "value": r["value"],
             "unit": r.get("unit", "")}
            for r in rows if r["metric"] == metric and r["clock"] == clock
            and (wanted is None or r["row"] in wanted) and r.get("value") is not None]
    return pd.DataFrame(bars, columns=["row", "column", "value", "unit"])


def category_chart(bars: pd.DataFrame, published: pd.DataFrame, metric: str,
                   unit: str = "") -> alt.TopLevelMixin:
    """Horizontal bars, one per row, coloured by column (side by side), and the paper's cells
    for the same row and column as black ticks; a plot area of ``PANEL_WIDTH`` pixels."""
    title = f"{metric} ({unit})" if unit else metric
    height = max(PANEL_HEIGHT, 22 * len(bars) + 8 * bars["row"].nunique())
    base = alt.Chart(bars).mark_bar().encode(
        y=alt.Y("row:N", title=None, sort=None,
                axis=alt.Axis(labelLimit=260, labelOverlap=False)),
        yOffset="column:N",
        x=alt.X("value:Q", title=title),
        color=alt.Color("column:N", title="column", legend=alt.Legend(orient="bottom")),
        tooltip=["row", "column", alt.Tooltip("value:Q", format=".4g")])
    layers = [base]
    if not published.empty:
        layers.append(alt.Chart(published).mark_tick(color="black", thickness=2).encode(
            y=alt.Y("row:N", sort=None), yOffset="column:N", x="value:Q",
            tooltip=["row", "column", alt.Tooltip("value:Q", format=".4g", title="paper")]))
    return alt.layer(*layers).properties(width=PANEL_WIDTH, height=height, autosize=PAD)


def category_published(store: ResultsStore, paper: str, reference: str, bars: pd.DataFrame,
                       metric: str) -> pd.DataFrame:
    """The cells of the paper's ``reference`` (a table or figure: several tables may share row
    and column names) with the same row, column and metric as a bar."""
    keys = set(zip(bars["row"], bars["column"], strict=True))
    cells = [{"row": c["row"], "column": c["column"], "value": c["value"]}
             for c in store.reference(paper)
             if c["reference"] == reference and c["metric"] == metric
             and c["status"] in NUMBERED and c.get("value") is not None
             and (c["row"], c["column"]) in keys]
    return pd.DataFrame(cells, columns=["row", "column", "value"])


def curve_chart(curves: pd.DataFrame, published: pd.DataFrame, ideal: pd.DataFrame,
                metric: str, unit: str = "") -> alt.TopLevelMixin:
    """Reproduced curves (lines), the paper's points (black diamonds) and the ideal (dashed).

    Legible whatever the table: one panel per machine (column family), two to a row, each with
    a fixed plot area of ``PANEL_WIDTH`` x ``PANEL_HEIGHT`` pixels (a legend never squeezes
    it); the queries' legend below, in ``LEGEND_COLUMNS`` columns, shared by the panels (one colour per query); log axes where the values span decades
    (``LOG_SPAN``). One machine gives a single layered chart. Only ``finite_points`` are
    drawn."""
    curves = finite_points(curves)
    published = finite_points(published) if not published.empty else published
    ideal = finite_points(ideal) if not ideal.empty else ideal
    families = sorted(curves["family"].unique())
    log_x = _log_scale(curves["x"]) and curves["x"].max() / curves["x"].min() >= 50
    y_values = pd.concat([curves["value"], published["value"] if not published.empty
                          else pd.Series(dtype=float)])
    log_y = _log_scale(y_values.astype(float))
    y_title = f"{metric} ({unit})" if unit else metric
    if log_y:
        y_title += ", log scale"
    queries = sorted(curves["row"].unique())
    legend = alt.Legend(orient="bottom", direction="vertical", columns=LEGEND_COLUMNS,
                        labelLimit=300, title="reproduced (query)", symbolLimit=0)
    color = alt.Color("row:N", scale=alt.Scale(domain=queries), legend=legend)
    y_scale = alt.Scale(type="log") if log_y else alt.Scale(zero=not log_y)
    if published.empty:
        published_family = pd.Series(dtype=str)
    elif "family" in published:  # a table with a row per configuration (LH*)
        published_family = published["family"]
    else:
        published_family = published["column"].map(lambda c: column_position(c)[0])

    def panel(family: str) -> alt.LayerChart:
        points = curves[curves["family"] == family]
        x = alt.X("x:Q", title=AXES[family].title if family in AXES else family,
                  scale=alt.Scale(type="log") if log_x else alt.Scale(zero=False))
        y = alt.Y("value:Q", title=y_title, scale=y_scale)
        layers = [alt.Chart(points).mark_line(point=True).encode(
            x=x, y=y, color=color,
            tooltip=["series", "column", alt.Tooltip("value:Q", format=".4g")])]
        own_ideal = ideal[ideal["family"] == family] if not ideal.empty else ideal
        if not own_ideal.empty:
            own_ideal = own_ideal.assign(
                kind="ideal (linear)" if metric == "speedup" else "ideal (flat)")
            layers.append(alt.Chart(own_ideal).mark_line(strokeDash=[6, 4], color="gray").encode(
                x=x, y=y, detail="family:N",
                tooltip=["kind", alt.Tooltip("value:Q", format=".3g")]))
        own_points = published[published_family == family] if not published.empty else published
        if not own_points.empty:
            own_points = own_points.assign(kind="published (paper)")
            layers.append(alt.Chart(own_points).mark_point(
                shape="diamond", size=140, filled=True, color="black").encode(
                x=x, y=y, shape=alt.Shape("kind:N", title="",
                                          scale=alt.Scale(range=["diamond"]),
                                          legend=alt.Legend(orient="bottom")),
                tooltip=["series", "reference", "column", alt.Tooltip("value:Q", format=".4g"),
                         "source", "note"]))
        title = panel_title(family) if len(families) > 1 else ""
        return alt.layer(*layers).properties(width=PANEL_WIDTH, height=PANEL_HEIGHT,
                                             title=title)

    return _panels([panel(f) for f in families])


def pivot_frame(rows: list[dict], metric: str, clock: str = "modeled",
                row_names: Iterable[str] | None = None) -> pd.DataFrame:
    """The run's own table for ``metric``: one line per row slug, one column per column slug
    (ordered along the axis when the slugs have one). A stored NaN keeps its line and column;
    ``table.attrs["stored"]`` lists the [row, column] cells the run stored, for ``style_pivot``
    to tell a stored NaN from a cell the run has no row for."""
    wanted = set(row_names) if row_names is not None else None
    picked = [r for r in rows if r["metric"] == metric and r["clock"] == clock
              and (wanted is None or r["row"] in wanted)]
    if not picked:
        return pd.DataFrame()
    frame = pd.DataFrame(picked).drop_duplicates(["row", "column"])
    table = frame.pivot(index="row", columns="column", values="value")
    table = table.loc[list(dict.fromkeys(frame["row"]))]
    table.attrs["stored"] = [[r, c] for r, c in zip(frame["row"], frame["column"], strict=True)]

    def order(column: str) -> tuple:
        position = column_position(column)
        return (0, position[0], position[1]) if position else (1, column, 0)

    table = table[sorted(table.columns, key=order)]
    table.columns.name = None
    return table


def style_pivot(table: pd.DataFrame):
    """``pivot_frame``'s table for display: 4 significant digits, "NaN" where the run stored a
    NaN and "-" where it has no row."""
    styler = table.style.format("{:.4g}", na_rep="-")
    for row, column in table.attrs.get("stored", ()):
        if column in table.columns and pd.isna(table.at[row, column]):
            styler = styler.format(na_rep="NaN", subset=pd.IndexSlice[[row], [column]])
    return styler


def run_scale(store: ResultsStore, rows: list[dict]) -> float | None:
    """The scale of the run that produced ``rows`` (None when it does not say)."""
    if not rows:
        return None
    run = store.run(rows[0]["run_id"])
    scale = run.get("scale")
    if scale is None:
        scale = decoded(run.get("parameters")).get("scale")
    return None if scale is None else float(scale)


# ----------------------------------------------------------------------------- compare runs

JOIN_KEYS = ("row", "column", "metric", "clock")
"""What pairs a row of one run with a row of another. The reference is left out by default:
a run at the paper's configuration files its rows under "Figure 2", the same experiment at a
smaller scale under "" (no published cell), and those rows should still line up."""


def run_label(run: Mapping[str, Any]) -> str:
    """One line naming a run in a select box."""
    bits = [run["run_id"], run["experiment"]]
    if run.get("scale") is not None:
        bits.append(f"scale {run['scale']:g}")
    if run.get("nodes"):
        bits.append("nodes " + ",".join(str(n) for n in run["nodes"]))
    if run.get("profile"):
        bits.append(str(run["profile"]))
    if run.get("status") not in (None, "ok"):
        bits.append(str(run["status"]))
    return " · ".join(bits)


def default_experiment(runs: list[Mapping[str, Any]]) -> str | None:
    """The experiment Compare runs opens on (``runs`` newest first): the one whose newest run is
    the most recent among experiments with two runs or more, else the newest run's."""
    if not runs:
        return None
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["experiment"]] = counts.get(r["experiment"], 0) + 1
    for r in runs:
        if counts[r["experiment"]] >= 2:
            return r["experiment"]
    return runs[0]["experiment"]


def default_pair(runs: list[Mapping[str, Any]]) -> tuple[int, int]:
    """Positions (A, B) in ``runs`` (newest first) to compare first: the two latest runs of
    ``default_experiment`` (B the newest of them, A the one before); with no experiment run
    twice, the two newest runs."""
    if len(runs) < 2:
        raise ValueError("comparing needs two runs")
    chosen = default_experiment(runs)
    same = [i for i, r in enumerate(runs) if r["experiment"] == chosen]
    if len(same) >= 2:
        return same[1], same[0]
    return 1, 0


def comparison_curves(rows_a: list[dict], rows_b: list[dict], metric: str,
                      clock: str = "modeled") -> pd.DataFrame:
    """The curves of ``metric`` of two runs in one table, with a ``run`` column (A or B)."""
    frames = [curve_frame(rows, metric, clock).assign(run=label)
              for label, rows in (("A", rows_a), ("B", rows_b))]
    return pd.concat(frames, ignore_index=True)


def comparison_chart(curves: pd.DataFrame, metric: str, unit: str = ""
                     ) -> alt.TopLevelMixin:
    """Run A (solid) and run B (dashed) as curves of ``metric``, one colour per query, one panel
    per machine, the same fixed plot size and log rules as ``curve_chart``; only
    ``finite_points`` are drawn."""
    curves = finite_points(curves)
    families = sorted(curves["family"].unique())
    log_x = _log_scale(curves["x"]) and curves["x"].max() / curves["x"].min() >= 50
    log_y = _log_scale(curves["value"].astype(float))
    y_title = (f"{metric} ({unit})" if unit else metric) + (", log scale" if log_y else "")
    queries = sorted(curves["row"].unique())
    color = alt.Color("row:N", scale=alt.Scale(domain=queries),
                      legend=alt.Legend(orient="bottom", direction="vertical",
                                        columns=LEGEND_COLUMNS, labelLimit=300, title="query",
                                        symbolLimit=0))
    dash = alt.StrokeDash("run:N", scale=alt.Scale(domain=["A", "B"], range=[[1, 0], [6, 3]]),
                          legend=alt.Legend(orient="bottom", title="run", symbolType="stroke"))

    def panel(family: str) -> alt.Chart:
        x = alt.X("x:Q", title=AXES[family].title if family in AXES else family,
                  scale=alt.Scale(type="log") if log_x else alt.Scale(zero=False))
        y = alt.Y("value:Q", title=y_title,
                  scale=alt.Scale(type="log") if log_y else alt.Scale(zero=True))
        return alt.Chart(curves[curves["family"] == family]).mark_line(point=True).encode(
            x=x, y=y, color=color, strokeDash=dash, detail="run:N",
            tooltip=["run", "series", "column", alt.Tooltip("value:Q", format=".4g")]
        ).properties(width=PANEL_WIDTH, height=PANEL_HEIGHT,
                     title=panel_title(family) if len(families) > 1 else "")

    return _panels([panel(f) for f in families])


def parameter_diff(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> pd.DataFrame:
    """The two runs' parameters side by side, with a flag where they differ."""
    a, b = decoded(run_a.get("parameters")), decoded(run_b.get("parameters"))
    lines = []
    for key in sorted(set(a) | set(b)):
        lines.append({"parameter": key, "A": _show(a.get(key, "-")), "B": _show(b.get(key, "-")),
                      "differs": a.get(key) != b.get(key)})
    return pd.DataFrame(lines, columns=["parameter", "A", "B", "differs"])


def compare_runs(rows_a: list[dict], rows_b: list[dict],
                 keys: Iterable[str] = JOIN_KEYS) -> pd.DataFrame:
    """The rows of two runs side by side: value A, value B, B - A and B / A.

    Rows are paired on ``keys``; a row only one run has appears with the other side empty.
    Repeated keys within a run are paired in order (first with first). Column ``in`` says
    which run has the row (``both``, ``A only``, ``B only``): a stored NaN is not a missing
    row."""
    keys = list(keys)
    shown = [k for k in ("reference", *JOIN_KEYS) if k not in keys]

    def side(rows: list[dict]) -> pd.DataFrame:
        frame = pd.DataFrame([{k: r.get(k) for k in (*keys, *shown, "value", "unit")}
                              for r in rows], columns=[*keys, *shown, "value", "unit"])
        frame["n"] = frame.groupby(keys, sort=False).cumcount()
        return frame

    a, b = side(rows_a), side(rows_b)
    joined = a.merge(b, on=[*keys, "n"], how="outer", suffixes=(" A", " B"), sort=False,
                     indicator=True)
    out = pd.DataFrame({k: joined[k] for k in keys})
    for k in shown:
        out[k] = joined[f"{k} A"].fillna(joined[f"{k} B"])
    out["A"] = joined["value A"].astype(float)
    out["B"] = joined["value B"].astype(float)
    out["unit"] = joined["unit A"].fillna(joined["unit B"])
    out["B - A"] = out["B"] - out["A"]
    denominator = out["A"].where(out["A"] != 0)
    out["B / A"] = out["B"] / denominator
    out["in"] = joined["_merge"].map({"both": "both", "left_only": "A only",
                                      "right_only": "B only"}).astype(str)
    order = [k for k in ("reference", "row", "column", "metric", "clock") if k in out.columns]
    return out[[*order, "A", "B", "B - A", "B / A", "unit", "in"]].reset_index(drop=True)


def changed(frame: pd.DataFrame, threshold: float) -> pd.Series:
    """Lines whose two values differ by more than ``threshold`` (0.1 = 10%), or that only one
    run has."""
    one_sided = frame["in"] != "both"
    ratio = frame["B / A"]
    off = (ratio - 1).abs() > threshold
    both_nan = frame["A"].isna() & frame["B"].isna()  # NaN stored by both runs: no change
    zero_vs_nonzero = ratio.isna() & ~one_sided & (frame["A"] != frame["B"]) & ~both_nan
    return one_sided | off.fillna(False) | zero_vs_nonzero


CHANGED = "background-color: #fff3cd; color: #664d03"


def style_comparison(frame: pd.DataFrame, threshold: float):
    """``compare_runs`` output with changed lines highlighted (see ``changed``)."""
    flags = changed(frame, threshold)

    def line_style(line: pd.Series) -> list[str]:
        return [CHANGED if flags.loc[line.name] else ""] * len(line)

    styler = frame.style.apply(line_style, axis=1).format(
        {"A": _stored, "B": _stored, "B - A": _num, "B / A": _num})
    for side, other in (("A", "B only"), ("B", "A only")):  # the run without the row: "-"
        absent = frame.index[frame["in"] == other]
        if len(absent):
            styler = styler.format(lambda _: "-", subset=pd.IndexSlice[absent, [side]])
    return styler


def _stored(value: Any) -> str:
    """A value a run stored: NaN is shown as NaN, not as a missing value."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return _num(value)


# ----------------------------------------------------------------------------------- findings

STATUS_MARK = {"pass": "PASS", "fail": "FAIL", "not checked": "not checked"}


def findings_counts(report: PaperReport) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "not checked": 0}
    for f in report.findings:
        counts[f.status] = counts.get(f.status, 0) + 1
    return counts



# ---------------------------------------------------------------------------------------- LH*
# The LH* page replays a small LH* file (minidb.sdds) one insert at a time: the file state and
# every bucket after each step, and where a client with a chosen image sends a chosen key.


@dataclass(frozen=True)
class LHStarStep:
    """The file after one insert: its state, the split it caused (if any) and its buckets."""

    number: int
    key: int
    level: int
    split: int
    split_pair: tuple[int, int] | None
    """(bucket that split, the bucket it made), when this insert caused a split."""
    buckets: dict[int, tuple[int, list[int]]]
    """Address -> (level, sorted keys)."""


def lhstar_keys(count: int, order: str, seed: int) -> list[int]:
    """The keys to insert: ``count`` of 0..999, "ascending" or "random" (seeded)."""
    import random as _random

    if order == "ascending":
        return list(range(count))
    return _random.Random(seed).sample(range(1000), count)


def lhstar_growth(capacity: int, n0: int, keys: list[int]) -> list[LHStarStep]:
    """Insert ``keys`` one by one into a new LH* file (uncontrolled splits, keys unhashed) and
    record the file after every insert."""
    from minidb.sdds import LHStarFile

    f = LHStarFile(capacity=capacity, n0=n0, machines=1, hashed=False)
    client, steps = f.client("loader"), []
    for number, key in enumerate(keys, start=1):
        before = f.state
        client.insert(key, key)
        pair = None
        if f.state != before:
            pair = (before.split, before.split + (n0 << before.level))
        steps.append(LHStarStep(number, key, f.state.level, f.state.split, pair,
                                {a: (lvl, sorted(r)) for a, (lvl, r) in f.buckets().items()}))
    return steps


def lhstar_buckets_frame(step: LHStarStep, capacity: int) -> pd.DataFrame:
    """One row per bucket: level, records, keys, and what this step did to it."""
    rows = []
    for address, (level, keys) in step.buckets.items():
        note = ""
        if step.split_pair and address == step.split_pair[0]:
            note = "just split"
        elif step.split_pair and address == step.split_pair[1]:
            note = "just made"
        elif step.key in keys:
            note = f"got key {step.key}"
        if len(keys) > capacity:
            note = (note + "; " if note else "") + "overflowing"
        rows.append({"bucket": address, "level": level, "records": len(keys),
                     "keys": ", ".join(map(str, keys)), "this step": note})
    return pd.DataFrame(rows)


def lhstar_chart(step: LHStarStep, capacity: int) -> alt.TopLevelMixin:
    """Records per bucket, coloured by level, with the bucket capacity as a rule."""
    frame = lhstar_buckets_frame(step, capacity)
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X("bucket:O", title="bucket"), y=alt.Y("records:Q", title="records"),
        color=alt.Color("level:N", title="level"), tooltip=["bucket", "level", "records", "keys"])
    rule = alt.Chart(pd.DataFrame({"capacity": [capacity]})).mark_rule(
        strokeDash=[4, 3]).encode(y="capacity:Q")
    return (bars + rule).properties(width=340, height=280)


def lhstar_route(level: int, split: int, n0: int, image_level: int, image_split: int,
                 key: int) -> tuple[list[str], int, tuple[int, int] | None]:
    """The request for ``key`` from a client with image (i', n') to a file in state (i, n), in
    words, one line per message; the forwards; the client's image after the IAM (None: no
    forward, no IAM)."""
    from minidb.sdds import FileState, Image, adjust_image, client_address, server_address

    state = FileState(level, split, n0)
    image = Image(image_level, image_split)
    a = client_address(image, key, n0)
    lines = [f"the client computes h_{image_level}({key}) = {key % (n0 << image_level)}"
             + (f" < n' = {image_split}, so h_{image_level + 1}({key}) = {a}"
                if key % (n0 << image_level) < image_split else "")
             + f" and sends the request to bucket {a}"]
    if a >= state.buckets:
        lines.append(f"bucket {a} does not exist: the image is ahead of the file (a file that "
                     "merged); the client starts again from the image (0, 0)")
        image = Image()
        a = client_address(image, key, n0)
        lines.append(f"the client sends the request to bucket {a}")
    first, hops = a, 0
    while True:
        j = state.bucket_level(a)
        nxt = server_address(a, j, key, n0)
        if nxt == a:
            lines.append(f"bucket {a} (level {j}): h_{j}({key}) = {a}, the key is home")
            break
        hops += 1
        lines.append(f"bucket {a} (level {j}): h_{j}({key}) = {key % (n0 << j)} is not {a}; "
                     f"it forwards to bucket {nxt} (forward {hops})")
        a = nxt
    if not hops:
        return lines, 0, None
    new = adjust_image(image, first, state.bucket_level(first), n0)
    lines.append(f"bucket {first} sends an IAM (address {first}, level "
                 f"{state.bucket_level(first)}): the image becomes ({new.level}, {new.split})")
    return lines, hops, (new.level, new.split)


# ------------------------------------------------------------------------------------ joins
#: the join plug-ins the joins page runs side by side (every one spills to respect its budget)
JOIN_PAGE_ALGORITHMS = ("simple_hash", "hybrid_hash", "grace_hash", "sort_merge",
                        "block_nested_loops")
JOIN_PAGE_QUERY = "SELECT * FROM a JOIN bprime b ON a.unique2 = b.unique2"
#: the counters each join plug-in keeps that say what the memory budget cost it
JOIN_PAGE_COUNTERS = {"overflows": "overflow resolutions (Simple hash)",
                      "partitions_spilled": "partitions spilled (GRACE, Hybrid)",
                      "spill_pages_written": "overflow pages written",
                      "spill_pages_read": "overflow pages read",
                      "sort_pages_written": "sort run pages written",
                      "inner_scans": "passes over the inner input (nested loops)",
                      "peak_memory_pages": "most pages held at once"}


def join_build_pages(rows: int, page_size: int = 4096) -> int:
    """Pages Bprime (a tenth of ``rows`` Wisconsin tuples, 208 bytes each) fills."""
    return max(1, math.ceil(max(1, rows // 10) * 208 / page_size))


def join_memory_frame(share: int, rows: int = 10_000, seed: int = 1,
                      algorithms: Iterable[str] = JOIN_PAGE_ALGORITHMS) -> pd.DataFrame:
    """joinABprime on one node (A of ``rows`` tuples, Bprime a tenth) with each join plug-in at
    ``share`` percent of the pages Bprime fills (Gamma §6.2.2 lowers memory the same way);
    one row per algorithm: its result rows (checked equal to the first algorithm's), the
    counters of ``JOIN_PAGE_COUNTERS`` and the pages it wrote and read for its budget."""
    import minidb
    from minidb import datagen

    if not 1 <= share <= 400:
        raise MinidbError(f"memory share must be between 1 and 400 percent, not {share}")
    build = join_build_pages(rows)
    out, first = [], None
    for name in algorithms:
        cls = plugins.lookup("join", name)
        # minidb's smallest budget is 3 pages; an algorithm may need more
        memory = max(int(build * share / 100), getattr(cls, "min_memory_pages", 0) or 0, 3)
        with minidb.connect(memory_pages=memory) as db:
            db.create_table("a", datagen.wisconsin(rows, seed=seed))
            db.create_table("bprime", datagen.wisconsin(max(1, rows // 10), seed=seed + 1))
            res = db.sql(JOIN_PAGE_QUERY, hint=name)
            counters = _join_counters(res.counters)
        keys = sorted(res.to_arrow().column("unique1").to_pylist())
        first = keys if first is None else first
        row = {"algorithm": name, "memory pages": memory, "result rows": res.rows,
               "same rows": keys == first}
        row.update({label: counters.get(key, 0) for key, label in JOIN_PAGE_COUNTERS.items()})
        written = sum(v for k, v in counters.items() if k.endswith("pages_written"))
        read = sum(v for k, v in counters.items() if k.endswith("pages_read"))
        row["pages written + read"] = written + read
        out.append(row)
    return pd.DataFrame(out)


def _join_counters(counters: Mapping[str, Any]) -> dict[str, int]:
    """The join operator's own counters out of a single-node result's (``opN.kind.name``)."""
    out: dict[str, int] = {}
    for key, value in counters.items():
        parts = key.split(".")
        if len(parts) == 3 and parts[1].endswith("_join"):
            out[parts[2]] = out.get(parts[2], 0) + int(value)
    return out


def join_memory_chart(frame: pd.DataFrame) -> alt.TopLevelMixin:
    """Pages each algorithm wrote and read to stay within its memory budget."""
    return alt.Chart(frame).mark_bar().encode(
        x=alt.X("algorithm:N", sort=None, title="join algorithm"),
        y=alt.Y("pages written + read:Q", title="pages written + read"),
        tooltip=list(frame.columns)).properties(width=420, height=260)


# ---------------------------------------------------------------------------- Volcano tuning
# The Volcano page retells Graefe and Thakkar's tuning study (1992) one step at a time. Each
# step is one experiment of ``minidb.experiments.volcano``; the page shows its modeled sort
# times per disk count beside the paper's and the counters that explain them (unfix and
# cluster calls, pool-lock hold and wait).


@dataclass(frozen=True)
class VolcanoStep:
    """One step of the paper's tuning sequence and the experiment that rebuilds it."""

    number: int
    short: str
    """A few words for a slider or an axis label."""
    title: str
    experiment: str
    section: str
    """Where the paper tells it, e.g. "§4.1, Figure 2"."""
    kept: str
    """The variant (row slug of the experiment) the paper carried on to the next step."""
    change: str
    """What the step changes, in a sentence or two."""
    lesson: str
    """What the paper found (its numbers and reasons, not minidb's)."""
    published_from: tuple[str, ...]
    """Tables and figures whose per-disk numbers belong to this step's variants."""
    notes_from: tuple[str, ...]
    """Tables and figures whose remarks (prose and shape cells) the page lists for this step."""


VOLCANO_STEPS = (
    VolcanoStep(
        1, "initial", "The initial software", "volcano.initial", "§3.3, Figures 1 and 4",
        "sort_initial",
        "4 KB clusters, packed records, one buffer pool, and the buffer manager called to unfix "
        "every record (three times per record: filter, sort and driver).",
        "Good speedup from 2 to 8 disks (89% efficiency), then a floor near 5 minutes. Figure 4 "
        "explains it: all buffer operations together hold the one pool lock for 150-180 s, a "
        "floor no number of disks can break, and the waiting for it grows sharply with every "
        "process added.",
        ("Figure 1", "Section 7"), ("Figure 1", "Figure 4", "Section 5")),
    VolcanoStep(
        2, "clusters", "Larger clusters", "volcano.clusters", "§4.1, Figure 2",
        "cluster_32kb",
        "The unit of I/O and buffering grows from 4 KB to 8-64 KB (32 KB from then on).",
        "Fewer, larger disk transfers: a clear gain, but a new floor near 4 minutes. The unfix "
        "calls per record, and so the pool lock, have not changed.",
        ("Figure 2",), ("Figure 2",)),
    VolcanoStep(
        3, "alignment at first", "Record alignment, first try", "volcano.alignment",
        "§4.2, Figure 3", "align_16_bytes",
        "Records packed (1 byte), aligned to the 32-bit word (4 bytes) or to a cache line "
        "(16 bytes). A 100-byte record needs no padding for 4 bytes but 12 bytes for 16, so "
        "16-byte alignment moves 12% more clusters.",
        "No appreciable difference: faster aligned access and more bytes to move cancel out. "
        "The paper keeps 16 bytes, to study caches later. (The model has no cache effect of "
        "alignment: in it the "
        "padding is simply small beside the lock.)",
        (), ("Figure 3",)),
    VolcanoStep(
        4, "memory", "Twice the memory", "volcano.buffer_size", "§4.3, Table I",
        "sort12_io3_work15_mb",
        "24 MB of sort space instead of 12 (and twice the I/O buffer and work space).",
        "No gain in the paper (1-2% slower): 8 MB already merge 100 MB in one level, so more "
        "memory saves no I/O. The paper keeps 12 MB. Look at the merge levels column.",
        ("Table I",), ("Table I",)),
    VolcanoStep(
        5, "pools", "More buffer pools", "volcano.pools_simple", "§5.1, Figure 5",
        "pools_1",
        "1 to 16 buffer pools, each with its own lock; still one unfix call per record.",
        "Spreading the calls over several locks cuts the waiting sharply, but many pools are "
        "unrealistic for a real system (uneven loads), so the paper looks for another cure "
        "and keeps one pool for now.",
        ("Figure 5",), ("Figure 5",)),
    VolcanoStep(
        6, "grouped unfix", "Grouped unfixing", "volcano.unfix", "§5.2, Table II",
        "macro_1",
        "Instead of calling the buffer manager for every record, a process remembers the "
        "cluster of the last record(s) and unfixes a cluster once for a whole run of its "
        "records (as a procedure or a macro, with 1, 4 or 16 entries).",
        "Far fewer buffer manager calls: the total lock hold falls from 120-130 s to under "
        "10 s and the total wait from minutes to about a second; at 16 disks the sort drops "
        "from 243 s to 90 s. The five grouped schemes hardly differ; macro [1] is kept.",
        ("Table II",), ("Table II",)),
    VolcanoStep(
        7, "unfix + 2 pools", "Grouped unfixing with two pools", "volcano.pools",
        "§5.3, Table III", "pools_2",
        "Both cures together: macro [1] grouped unfixing with one or two buffer pools.",
        "Two pools wait a little less; the first runs under 1.5 minutes. The bulk of the gain "
        "came from grouped unfixing. Two pools are kept.",
        ("Table III",), ("Table III",)),
    VolcanoStep(
        8, "alignment", "Final: 4-byte alignment", "volcano.final",
        "§6.3, Table V, §7, Figure 7", "align_4_bytes",
        "Records aligned to 4 bytes instead of 16: 100-byte records no longer carry 12 bytes "
        "of padding, so every transfer moves 12% less. (The paper's §6.1 staggered flushes "
        "come before this, in experiment volcano.staggering; §6.2 processor affinity in "
        "volcano.affinity, and from here on processes are bound to their CPUs.) The "
        "initial software runs again beside the final one, as in Figure 7.",
        "About 5% faster in the paper rather than the hoped-for 12%. The tuned sort is about "
        "3.6 times faster than the initial one at 16 disks, with close to linear speedup.",
        ("Table V", "Figure 1", "Section 7"), ("Section 6.3", "Table V", "Figure 7")),
)

#: the numbers of a Volcano run the page shows (modeled clock): metric -> column label
VOLCANO_COLUMNS = {
    "elapsed": "elapsed (s)",
    "unfix_calls": "unfix calls",
    "cluster_calls": "cluster calls",
    "lock_hold_time": "lock hold (s)",
    "lock_wait_time": "lock wait (s)",
    "lock_hold_share": "lock hold share (%)",
    "lock_wait_share": "lock wait share (%)",
    "merge_levels": "merge levels",
}
#: the paper's numbers that sit beside a measured column: metric -> label of the paper's column
VOLCANO_PUBLISHED = {"elapsed": "paper (s)", "lock_hold_time": "paper lock hold (s)",
                     "lock_wait_time": "paper lock wait (s)"}
#: summary rows of ``volcano.final`` that repeat a variant's number (``sort_final`` is
#: ``align_4_bytes`` at the largest disk count)
VOLCANO_SUMMARY_ROWS = frozenset({"sort_final"})
#: a smaller version of the whole sequence for the page's button (about 10 s): a tenth of the
#: records and of the memory, so runs and merge levels keep the paper's shape
VOLCANO_SMALL = {"scale": 0.1, "disks": [2, 4, 8]}
VOLCANO_SMALL_EXTRA = {"volcano.clusters": {"cluster_kb": [4, 8, 16, 32]},
                       "volcano.pools_simple": {"pools": [1, 2, 4, 8]},
                       "volcano.final": {"initial_disks": [2, 4, 8]}}

_VOLCANO_DISKS = re.compile(r"^disks_(?P<disks>\d+)(?:_time|_total_lock|_total_wait)?$")


def volcano_step(key: int | str) -> VolcanoStep:
    """A step by its number (1-8), its short name or its experiment's name."""
    for step in VOLCANO_STEPS:
        if key in (step.number, step.short, step.experiment):
            return step
    raise MinidbError(f"no Volcano tuning step {key!r}: the steps are "
                      + ", ".join(f"{s.number} ({s.short})" for s in VOLCANO_STEPS))


def volcano_disks(column: str) -> int | None:
    """The disk count a Volcano column names: ``disks_8`` and Table II's ``disks_8_time``,
    ``disks_8_total_lock``, ``disks_8_total_wait`` -> 8; None for ``curve``, ``disks_2_to_8``..."""
    found = _VOLCANO_DISKS.match(column)
    return int(found["disks"]) if found else None


def _reference_cells(reference: Any) -> list[dict]:
    """The paper's cells as dicts, from ``load_reference`` (a pyarrow table) or a list."""
    if reference is None:
        from minidb.results import load_reference

        reference = load_reference("volcano")
    if hasattr(reference, "to_pylist"):
        return reference.to_pylist()
    return [dict(c) for c in reference]


def _volcano_published(cells: list[dict]) -> dict[tuple[int, str, int, str], tuple[float, str]]:
    """(step number, variant, disks, metric) -> (the paper's number, where it is printed).

    Looked up per step: Figure 5's ``pools_1`` (one unfix call per record) is not Table III's
    ``pools_1`` (grouped unfixing), though the rows share a name."""
    found: dict[tuple[int, str, int, str], tuple[float, str]] = {}
    for step in VOLCANO_STEPS:
        for c in cells:
            if (c["reference"] not in step.published_from or c.get("status") not in NUMBERED
                    or c.get("value") is None or c["metric"] not in VOLCANO_PUBLISHED):
                continue
            disks = volcano_disks(c["column"])
            if disks is None:
                continue
            where = c["reference"] + (" (text)" if c["status"] == "prose" else "")
            found.setdefault((step.number, c["row"], disks, c["metric"]),
                             (float(c["value"]), where))
    return found


VOLCANO_FRAME_COLUMNS = [
    "step", "experiment", "variant", "kept", "disks", "scale", "run",
    "elapsed (s)", "paper (s)", "elapsed / paper", "paper source",
    "unfix calls", "cluster calls",
    "lock hold (s)", "paper lock hold (s)", "lock wait (s)", "paper lock wait (s)",
    "lock hold share (%)", "lock wait share (%)", "merge levels",
]


def volcano_steps_frame(rows: Iterable[Mapping[str, Any]], reference: Any = None
                        ) -> pd.DataFrame:
    """The Volcano experiments' rows as one table: a line per (step, variant, disk count).

    Each line has the modeled elapsed time, the paper's number for the same configuration
    (from ``reference``, default ``load_reference("volcano")``) and, at scale 1 only, their
    ratio; then the counters that explain the time: unfix and cluster calls, the pool locks'
    total hold and wait (sums over processes, as Table II) and their shares of elapsed time
    (averaged over processes, in percent, as Figure 4), merge levels. ``kept`` marks the
    variant the paper carried on. Rows of other experiments, wall-clock rows and summary
    columns (``curve``, ``disks_2_to_8``...) are left out."""
    published = _volcano_published(_reference_cells(reference))
    steps = {s.experiment: s for s in VOLCANO_STEPS}
    lines: dict[tuple[int, str, int], dict] = {}
    variant_order: dict[tuple[int, str], int] = {}
    for r in rows:
        step = steps.get(r.get("experiment", ""))
        disks = volcano_disks(str(r["column"]))
        if (step is None or disks is None or r["clock"] != "modeled"
                or r["metric"] not in VOLCANO_COLUMNS or r["row"] in VOLCANO_SUMMARY_ROWS):
            continue
        variant_order.setdefault((step.number, r["row"]), len(variant_order))
        key = (step.number, r["row"], disks)
        if key not in lines:
            scale = decoded(r.get("parameters")).get("scale")
            lines[key] = {"step": step.number, "experiment": step.experiment,
                          "variant": r["row"], "kept": r["row"] == step.kept, "disks": disks,
                          "scale": None if scale is None else float(scale),
                          "run": r.get("run_id") or ""}
        value = float(r["value"])
        if r["metric"] in ("lock_hold_share", "lock_wait_share"):
            value *= 100.0
        # a number can be stored twice (``sort_initial`` at 16 disks also under Section 7)
        lines[key].setdefault(VOLCANO_COLUMNS[r["metric"]], value)
    for (number, variant, disks), line in lines.items():
        for metric, label in VOLCANO_PUBLISHED.items():
            paper = published.get((number, variant, disks, metric))
            if paper is not None:
                line[label] = paper[0]
                if metric == "elapsed":
                    line["paper source"] = paper[1]
        if line.get("scale") == 1.0 and line.get("paper (s)") and "elapsed (s)" in line:
            line["elapsed / paper"] = line["elapsed (s)"] / line["paper (s)"]
    ordered = sorted(lines.items(),
                     key=lambda item: (item[0][0], variant_order[item[0][:2]], item[0][2]))
    frame = pd.DataFrame([line for _, line in ordered], columns=VOLCANO_FRAME_COLUMNS)
    frame["paper source"] = frame["paper source"].fillna("")
    return frame


def volcano_step_table(frame: pd.DataFrame, step: int | str) -> pd.DataFrame:
    """The lines of one step, for its table: the step's variants and disk counts with their
    times and counters; the paper's columns only where it prints numbers for this step."""
    number = volcano_step(step).number
    lines = frame[frame["step"] == number].drop(columns=["step", "experiment", "run"])
    optional = ["paper (s)", "elapsed / paper", "paper lock hold (s)", "paper lock wait (s)"]
    empty = [c for c in optional if lines[c].isna().all()]
    if lines["paper source"].eq("").all():
        empty.append("paper source")
    return lines.drop(columns=empty).reset_index(drop=True)


def volcano_scales(frame: pd.DataFrame) -> dict[int, float | None]:
    """The scale of the run shown for each step that has lines (step number -> scale)."""
    out = {}
    for number, lines in frame.groupby("step", sort=True):
        scales = lines["scale"].dropna()
        out[int(number)] = float(scales.iloc[0]) if len(scales) else None
    return out


def volcano_progress_disks(frame: pd.DataFrame) -> tuple[list[int], int | None]:
    """Disk counts the sequence can be followed at (ascending) and the one to start with: the
    count the most steps measured for their kept variant, the larger one on a tie."""
    kept = frame[frame["kept"] & frame["elapsed (s)"].notna()]
    if kept.empty:
        return sorted(int(d) for d in frame["disks"].unique()), None
    steps_per_count = kept.groupby("disks")["step"].nunique()
    best = max(steps_per_count.index, key=lambda d: (steps_per_count[d], d))
    return sorted(int(d) for d in frame["disks"].unique()), int(best)


VOLCANO_PROGRESS_COLUMNS = ["step", "label", "kept variant", "elapsed (s)", "paper (s)",
                            "best variant", "best elapsed (s)", "unfix calls",
                            "lock wait (s)", "scale"]


def volcano_progress_frame(frame: pd.DataFrame, disks: int) -> pd.DataFrame:
    """The tuning sequence at ``disks`` disks: a line per step with the elapsed time of the
    variant the paper kept, the paper's number for it, and the fastest variant the step tried
    (a step can find a faster one and still not keep it, like Figure 5's 8 pools). A step not
    measured at ``disks`` has empty numbers."""
    out = []
    for step in VOLCANO_STEPS:
        lines = frame[(frame["step"] == step.number) & (frame["disks"] == disks)
                      & frame["elapsed (s)"].notna()]
        kept = lines[lines["variant"] == step.kept]
        line: dict[str, Any] = {"step": step.number, "label": f"{step.number} {step.short}",
                                "kept variant": step.kept}
        if len(kept):
            first = kept.iloc[0]
            line.update({"elapsed (s)": first["elapsed (s)"], "paper (s)": first["paper (s)"],
                         "unfix calls": first["unfix calls"],
                         "lock wait (s)": first["lock wait (s)"], "scale": first["scale"]})
        if len(lines):
            fastest = lines.loc[lines["elapsed (s)"].idxmin()]
            line.update({"best variant": fastest["variant"],
                         "best elapsed (s)": fastest["elapsed (s)"]})
            line.setdefault("scale", fastest["scale"])
        out.append(line)
    return pd.DataFrame(out, columns=VOLCANO_PROGRESS_COLUMNS)


#: what a step's headline numbers are: column of ``volcano_steps_frame`` -> metric label
VOLCANO_SUMMARY = {"elapsed (s)": "elapsed", "unfix calls": "unfix calls",
                   "lock hold (s)": "lock hold", "lock wait (s)": "lock wait"}


def volcano_step_summary(frame: pd.DataFrame, step: int | str, disks: int
                         ) -> list[tuple[str, float, float | None]]:
    """The headline numbers of a step at ``disks`` disks: (label, value of the kept variant,
    value of the previous step's kept variant or None). The previous value is left out when
    that step was not measured at ``disks`` or ran at another scale (not comparable)."""
    current = volcano_step(step)
    mine = frame[(frame["step"] == current.number) & (frame["variant"] == current.kept)
                 & (frame["disks"] == disks)]
    if mine.empty:
        return []
    before = pd.DataFrame()
    if current.number > 1:
        previous = volcano_step(current.number - 1)
        before = frame[(frame["step"] == previous.number)
                       & (frame["variant"] == previous.kept) & (frame["disks"] == disks)
                       & (frame["scale"] == mine.iloc[0]["scale"])]
    out = []
    for column, label in VOLCANO_SUMMARY.items():
        value = mine.iloc[0][column]
        if pd.isna(value):
            continue
        old = before.iloc[0][column] if len(before) else None
        out.append((label, float(value), None if old is None or pd.isna(old) else float(old)))
    return out


def volcano_step_notes(step: int | str, reference: Any = None) -> list[str]:
    """What the paper says in words around a step (its prose and shape cells, with notes)."""
    chosen = volcano_step(step)
    notes = []
    for c in _reference_cells(reference):
        if c["reference"] not in chosen.notes_from or not c.get("note"):
            continue
        if c.get("status") not in ("prose", "shape", "ok"):
            continue
        where = c["row"] if c["column"] in ("curve", "na") else f"{c['row']} at {c['column']}"
        number = "" if c.get("value") is None else f" = {_num(c['value'])} {c.get('unit') or ''}"
        notes.append(f"{c['reference']}, {where} ({c['metric']}{number.rstrip()}): {c['note']}")
    return notes


def volcano_stored_rows(store: ResultsStore, runs: Mapping[str, str] | None = None
                        ) -> list[dict]:
    """The rows of the tuning sequence in ``store``: for each step's experiment, the run
    ``runs`` names for it (experiment -> run id), else its latest ok run."""
    runs = dict(runs or {})
    rows = []
    for step in VOLCANO_STEPS:
        if step.experiment in runs:
            rows += store.rows(run_id=runs[step.experiment])
        else:
            rows += store.rows(experiment=step.experiment)
    return rows


def run_volcano_small(store: ResultsStore,
                      progress_for: Callable[[Experiment], Progress] | None = None
                      ) -> list[tuple[str, str, int]]:
    """Every step's experiment at ``VOLCANO_SMALL`` (a tenth of the paper's sort, 2 to 8
    disks), stored as one run each; returns (experiment, run id, number of rows) per step."""
    from minidb.experiments import get_experiment

    done = []
    for step in VOLCANO_STEPS:
        exp = get_experiment(step.experiment)
        overrides = {**VOLCANO_SMALL, **VOLCANO_SMALL_EXTRA.get(step.experiment, {})}
        progress = progress_for(exp) if progress_for else None
        run_id, rows = run_and_store(exp, store, overrides, progress=progress)
        done.append((step.experiment, run_id, len(rows)))
    return done


def volcano_step_chart(frame: pd.DataFrame, step: int | str) -> alt.TopLevelMixin:
    """Elapsed time against disks for every variant of one step (the kept one drawn thick),
    the previous step's kept variant dashed grey ("before this step", when its run has the
    same scale) and the paper's numbers as black diamonds. A step measured at one disk count
    only (Figure 5: 1 to 16 pools at 16 disks) is drawn as one bar per variant instead."""
    current = volcano_step(step)
    lines = frame[(frame["step"] == current.number) & frame["elapsed (s)"].notna()]
    if lines.empty:
        raise MinidbError(f"no rows of {current.experiment} to draw")
    scale = lines["scale"].iloc[0]
    before = frame.iloc[0:0]
    if current.number > 1:
        previous = volcano_step(current.number - 1)
        before = frame[(frame["step"] == previous.number) & (frame["variant"] == previous.kept)
                       & (frame["scale"] == scale) & frame["elapsed (s)"].notna()]
        before = before.assign(kind=f"before this step ({previous.kept})")
    paper = lines[lines["paper (s)"].notna()].assign(kind="published (paper)")
    single = lines["disks"].nunique() == 1
    if single:
        before = before[before["disks"] == lines["disks"].iloc[0]]
    values = pd.concat([lines["elapsed (s)"], before["elapsed (s)"], paper["paper (s)"]])
    log_y = _log_scale(values.astype(float))
    y_title = "elapsed (s, modeled)" + (", log scale" if log_y else "")
    y_scale = alt.Scale(type="log") if log_y else alt.Scale(zero=True)
    variants = list(dict.fromkeys(lines["variant"]))
    color = alt.Color("variant:N", scale=alt.Scale(domain=variants), sort=variants,
                      legend=alt.Legend(orient="bottom", direction="vertical",
                                        columns=LEGEND_COLUMNS,
                                        title="variant (solid: kept)" if single
                                        else "variant (thick: kept)",
                                        labelLimit=300, symbolLimit=0))
    before_legend = alt.Legend(orient="bottom", symbolType="stroke", labelLimit=300)
    paper_shape = alt.Shape("kind:N", title="", scale=alt.Scale(range=["diamond"]),
                            legend=alt.Legend(orient="bottom"))
    tooltip = ["variant", "disks", alt.Tooltip("elapsed (s):Q", format=".4g"),
               alt.Tooltip("unfix calls:Q", format=",.0f"),
               alt.Tooltip("lock wait (s):Q", format=".3g")]
    paper_tooltip = ["variant", "disks", alt.Tooltip("paper (s):Q", format=".4g"),
                     "paper source"]

    if single:
        disks = int(lines["disks"].iloc[0])
        x = alt.X("variant:N", sort=variants, title=f"variant, at {disks} disks",
                  axis=alt.Axis(labelAngle=-30, labelLimit=200))
        layers = [alt.Chart(lines).mark_bar(size=28).encode(
            x=x, y=alt.Y("elapsed (s):Q", title=y_title, scale=y_scale), color=color,
            opacity=alt.condition("datum.kept", alt.value(1.0), alt.value(0.6)),
            tooltip=tooltip)]
        if not before.empty:
            layers.append(alt.Chart(before).mark_rule(color="gray", strokeWidth=2).encode(
                y=alt.Y("elapsed (s):Q", scale=y_scale),
                strokeDash=alt.StrokeDash("kind:N", title="", scale=alt.Scale(range=[[6, 4]]),
                                          legend=before_legend),
                tooltip=["kind", alt.Tooltip("elapsed (s):Q", format=".4g")]))
    else:
        ticks = sorted(set(lines["disks"]) | set(before["disks"]))
        x = alt.X("disks:Q", title="disks (one process each)", scale=alt.Scale(zero=False),
                  axis=alt.Axis(values=[int(d) for d in ticks], format="d"))
        layers = [alt.Chart(lines).mark_line(point=True).encode(
            x=x, y=alt.Y("elapsed (s):Q", title=y_title, scale=y_scale), color=color,
            strokeWidth=alt.condition("datum.kept", alt.value(4), alt.value(1.5)),
            tooltip=tooltip)]
        if not before.empty:
            # points too: the step before may have measured a single disk count (Figure 5)
            layers.append(alt.Chart(before).mark_line(point=True, color="gray").encode(
                x=x, y=alt.Y("elapsed (s):Q", scale=y_scale),
                strokeDash=alt.StrokeDash("kind:N", title="", scale=alt.Scale(range=[[6, 4]]),
                                          legend=before_legend),
                tooltip=["kind", "disks", alt.Tooltip("elapsed (s):Q", format=".4g")]))
    if not paper.empty:
        layers.append(alt.Chart(paper).mark_point(
            shape="diamond", size=140, filled=True, color="black").encode(
            x=x, y=alt.Y("paper (s):Q", scale=y_scale), shape=paper_shape,
            tooltip=paper_tooltip))
    return alt.layer(*layers).properties(width=PANEL_WIDTH, height=PANEL_HEIGHT,
                                         autosize=PAD)


VOLCANO_PROGRESS_KINDS = {"kept configuration": "#4c78a8", "best variant tried": "#f58518",
                          "published (paper)": "black"}


def volcano_progress_chart(progress: pd.DataFrame, current: int | str,
                           disks: int) -> alt.TopLevelMixin:
    """The tuning sequence at ``disks`` disks as bars, one per step: the kept configuration's
    elapsed time (steps after ``current`` faded), a tick at the fastest variant the step tried
    and a black diamond at the paper's number."""
    number = volcano_step(current).number
    order = progress["label"].tolist()
    x = alt.X("label:N", sort=order, title="tuning step",
              axis=alt.Axis(labelAngle=-30, labelLimit=200))
    y_title = f"elapsed at {disks} disks (s, modeled)"
    kinds = list(VOLCANO_PROGRESS_KINDS)
    color = alt.Color("kind:N", title="", scale=alt.Scale(
        domain=kinds, range=list(VOLCANO_PROGRESS_KINDS.values())),
        legend=alt.Legend(orient="bottom"))
    opacity = alt.condition(f"datum.step <= {number}", alt.value(1.0), alt.value(0.3))
    kept = progress[progress["elapsed (s)"].notna()].assign(kind=kinds[0])
    best = progress[progress["best elapsed (s)"].notna()].assign(kind=kinds[1])
    paper = progress[progress["paper (s)"].notna()].assign(kind=kinds[2])
    tooltip = ["label", "kept variant", alt.Tooltip("elapsed (s):Q", format=".4g"),
               "best variant", alt.Tooltip("best elapsed (s):Q", format=".4g"),
               alt.Tooltip("paper (s):Q", format=".4g")]
    layers = [
        alt.Chart(kept).mark_bar(size=28).encode(
            x=x, y=alt.Y("elapsed (s):Q", title=y_title), color=color, opacity=opacity,
            tooltip=tooltip),
        alt.Chart(best).mark_tick(thickness=3, size=34).encode(
            x=x, y=alt.Y("best elapsed (s):Q"), color=color, opacity=opacity, tooltip=tooltip),
    ]
    if not paper.empty:
        layers.append(alt.Chart(paper).mark_point(shape="diamond", size=120, filled=True).encode(
            x=x, y=alt.Y("paper (s):Q"), color=color, opacity=opacity, tooltip=tooltip))
    return alt.layer(*layers).properties(width=PANEL_WIDTH, height=PANEL_HEIGHT,
                                         autosize=PAD)


def volcano_hint(path: str | os.PathLike) -> str:
    """What to do when the store at ``path`` holds no run of the Volcano tuning study."""
    return (f"No run of the Volcano tuning study is stored in {path} yet. In a shell, run "
            f"`MINIDB_RESULTS={path} minidb reproduce volcano --quick` (the paper's full sort "
            f"for every step, a minute or two) and reload this page, or run a small version "
            f"of the sequence with the button below (a tenth of the records, 2 to 8 disks, "
            f"about 10 seconds).")
