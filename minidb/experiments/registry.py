"""Named, parameterized, seeded experiments that rebuild the papers' tables and figures.

An experiment is a plain function registered under ``paper.name`` (``gamma.selection``,
``tandem.speedup``...) with its default parameters. It builds the machine the paper measured,
runs the paper's queries on it and returns *tidy rows*, one number per row::

    {"paper": "gamma", "experiment": "gamma.selection", "reference": "Table 1",
     "row": "select_1pct_nonindexed", "column": "gamma_100000",
     "parameters": {"tuples": 100000, "nodes": 8, "page_size": 4096, ...},
     "metric": "response_time", "value": 13.2, "unit": "s", "clock": "modeled"}

``reference`` / ``row`` / ``column`` name the published cell the row reproduces (the slugs of
``datasets/reference/``); ``reference`` is empty when the configuration is not one the paper
measured (at a reduced ``scale``, for example), so only like is compared with like. The results
store adds the run id.

Every experiment takes ``scale`` (relation sizes are multiplied by it; 1.0 is the paper's),
``seed``, ``backend`` (``inline`` or ``ray``: the counters, and so the modeled clock, are the same
on both) and ``profile`` where the machine is not fixed by the experiment. ``quick`` parameters
are what ``minidb reproduce PAPER --quick`` uses: small enough for a 2-core laptop and for CI.

Writing one::

    @experiment("gamma.example", title="...", references=("Table 1",),
                defaults={"scale": 1.0, "nodes": [8]}, quick={"scale": 0.1})
    def example(p: Params, progress: Progress) -> list[dict]:
        progress.start(len(p["nodes"]))
        ...
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from minidb.cluster.machine import MAX_NODES as CLUSTER_MAX_NODES
from minidb.errors import MinidbError
from minidb.plugins import _REGISTRY, register

PAPERS: dict[str, str] = {
    "gamma": "DeWitt, Ghandeharizadeh, Schneider: A Performance Analysis of the Gamma Database "
             "Machine (1988)",
    "tandem": "Englert, Gray, Kocher, Shah: A Benchmark of NonStop SQL Release 2 (1989)",
    "volcano": "Graefe, Thakkar: Tuning a Parallel Database Algorithm on a Shared-memory "
               "Multiprocessor (1992)",
    "lhstar": "Karlsson, Kersten: Scalable Storage for a DBMS using Transparent Distribution "
              "(1997)",
    "ingres": "Stonebraker et al.: Performance Analysis of Distributed Data Base Systems (1983)",
}

#: modules whose experiments register themselves when imported
BUILTIN_MODULES = ("minidb.experiments.gamma", "minidb.experiments.gamma_optimizer",
                   "minidb.experiments.gamma_joins",
                   "minidb.experiments.tandem", "minidb.experiments.tandem_oltp",
                   "minidb.experiments.lhstar",
                   "minidb.experiments.volcano", "minidb.experiments.ingres",
                   "minidb.experiments.commit", "minidb.experiments.locking")

CLOCKS = ("modeled", "wall")
Params = dict[str, Any]

#: the most nodes (or partitions) an experiment's machine may have (``minidb.cluster.machine``):
#: every node is simulated in this process, so a typo such as 10000 would run for hours
MAX_NODES = CLUSTER_MAX_NODES
#: the largest seed: numpy's generators take no negative seed, and LH*'s keys must fit 64 bits
MAX_SEED = 2**32 - 1
#: the largest scale: relation sizes far beyond the papers' cannot be built in memory anyway
MAX_SCALE = 100.0


class ExperimentError(MinidbError):
    """An unknown experiment or paper, or a parameter an experiment does not take."""


class Progress:
    """What an experiment reports while it runs; the CLI shows it as a progress bar.

    ``start(total)`` says how many steps there are, ``advance(label)`` ends one. The default does
    nothing, so experiments run silently from Python and in tests.
    """

    def start(self, total: int, label: str = "") -> None:
        """The experiment will take ``total`` steps."""

    def advance(self, label: str = "") -> None:
        """One step is done; ``label`` says which."""


@dataclass(frozen=True)
class Experiment:
    """One registered experiment (see the module docstring)."""

    name: str
    paper: str
    title: str
    references: tuple[str, ...]
    function: Callable[[Params, Progress], list[dict]] = field(repr=False)
    defaults: Params = field(default_factory=dict)
    quick: Params = field(default_factory=dict)

    def parameters(self, overrides: Params | None = None, quick: bool = False) -> Params:
        """The defaults, then the quick settings (if ``quick``), then ``overrides``; an unknown
        name or a value of the wrong kind is an ``ExperimentError``."""
        params = dict(self.defaults)
        if quick:
            params.update(self.quick)
        for key, value in (overrides or {}).items():
            if value is None:
                continue
            if key not in self.defaults:
                raise ExperimentError(
                    f"{self.name} has no parameter {key!r}; it takes: {', '.join(self.defaults)}")
            params[key] = _coerce(self.name, key, value, self.defaults[key])
        _check_known(params)
        return params

    def run(self, overrides: Params | None = None, quick: bool = False,
            progress: Progress | None = None) -> list[dict]:
        """Run with the given parameters and return its tidy rows (checked)."""
        params = self.parameters(overrides, quick)
        return self.call(params, progress)

    def call(self, params: Params, progress: Progress | None = None) -> list[dict]:
        """Run with checked ``params`` (from ``parameters``) and return the checked rows."""
        from minidb.experiments.machines import runtime

        with runtime(params.get("backend"), self.name):
            rows = self.function(params, progress or Progress())
        for r in rows:
            check_row(r)
        return rows


def experiment(name: str, *, title: str, references: Sequence[str], defaults: Params,
               quick: Params | None = None) -> Callable:
    """Decorator: register ``function(params, progress) -> rows`` as experiment ``name``."""
    paper = name.split(".", 1)[0]
    if paper not in PAPERS or "." not in name:
        raise ValueError(f"experiment names are paper.name with paper in {sorted(PAPERS)}: {name!r}")

    def wrap(function: Callable[[Params, Progress], list[dict]]) -> Callable:
        register("experiment", name)(Experiment(name, paper, title, tuple(references), function,
                                                dict(defaults), dict(quick or {})))
        return function

    return wrap


def _load() -> None:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def get_experiment(name: str) -> Experiment:
    """The experiment registered as ``name``; an unknown name lists the known ones."""
    _load()
    known = _REGISTRY.get("experiment", {})
    if name.lower() not in known:
        raise ExperimentError(f"unknown experiment {name!r}; choose one of: "
                              f"{', '.join(sorted(known)) or 'none'} (see `minidb list`)")
    return known[name.lower()]


def experiments(paper: str | None = None) -> list[Experiment]:
    """Every registered experiment (of ``paper``), in registration order."""
    _load()
    if paper is not None:
        check_paper(paper)
    found = list(_REGISTRY.get("experiment", {}).values())
    return [e for e in found if paper is None or e.paper == paper]


def check_paper(paper: str) -> str:
    if paper not in PAPERS:
        raise ExperimentError(f"unknown paper {paper!r}; choose one of: {', '.join(PAPERS)}")
    return paper


def run_experiment(name: str, quick: bool = False, progress: Progress | None = None,
                   **overrides: Any) -> list[dict]:
    """Run experiment ``name`` and return its rows (not stored; see ``minidb.experiments.reproduce``)."""
    return get_experiment(name).run(overrides, quick, progress)


def make_row(experiment_name: str, reference: str, row: str, column: str, parameters: Params,
             metric: str, value: float, unit: str, clock: str = "modeled") -> dict:
    """One tidy row (the keys the results store expects)."""
    return {"paper": experiment_name.split(".", 1)[0], "experiment": experiment_name,
            "reference": reference, "row": row, "column": column,
            "parameters": dict(parameters), "metric": metric, "value": float(value),
            "unit": unit, "clock": clock}


ROW_KEYS = ("paper", "experiment", "reference", "row", "column", "parameters", "metric", "value",
            "unit", "clock")


def check_row(r: dict) -> None:
    """A row an experiment returned has every key, a known clock and a finite number."""
    missing = [k for k in ROW_KEYS if k not in r]
    if missing:
        raise ExperimentError(f"experiment row lacks {missing}: {r}")
    if r["clock"] not in CLOCKS:
        raise ExperimentError(f"experiment row has clock {r['clock']!r}, not one of {CLOCKS}")
    if not isinstance(r["value"], float) or r["value"] != r["value"]:
        raise ExperimentError(f"experiment row has no number: {r}")


def _check_known(params: Params) -> None:
    """Names that must exist before anything runs: the profile and the backend."""
    if "profile" in params:
        from minidb.cost.profiles import get_profile

        get_profile(params["profile"])  # an unknown name lists the known ones
    if "backend" in params and params["backend"] not in ("inline", "ray"):
        raise ExperimentError(f"backend must be 'inline' or 'ray', not {params['backend']!r}")
    if "seed" in params and not 0 <= params["seed"] <= MAX_SEED:
        raise ExperimentError(f"seed must be a whole number from 0 to {MAX_SEED:,}, not "
                              f"{params['seed']!r}")
    for key in ("scale",):
        if key in params and not 0 < params[key] <= MAX_SCALE:
            raise ExperimentError(f"{key} must be a positive number, at most {MAX_SCALE:g} (the "
                                  f"paper's sizes x {MAX_SCALE:g}), not {params[key]!r}")
    for key in ("nodes", "partitions", "page_sizes", "sizes"):
        values = params.get(key)
        values = [values] if isinstance(values, int) else values
        if values is not None and (not values or any(v < 1 for v in values)):
            raise ExperimentError(f"{key} must be positive whole numbers, not {params[key]!r}")
        if key in ("nodes", "partitions") and values and max(values) > MAX_NODES:
            raise ExperimentError(f"{key} may be at most {MAX_NODES} (every node is simulated "
                                  f"in this process), not {max(values)}")


def _coerce(name: str, key: str, value: Any, default: Any) -> Any:
    """``value`` (maybe a string from the command line) as the kind of ``default``."""
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes")
            return bool(value)
        if isinstance(default, list):
            items = value.split(",") if isinstance(value, str) else list(value)
            kind = type(default[0]) if default else str
            out = [kind(str(v).strip()) if kind is not str else str(v).strip() for v in items]
            if not out:
                raise ValueError(value)
            if repeated := [v for i, v in enumerate(out) if v in out[:i]]:
                raise ExperimentError(f"{name}: parameter {key} has {repeated[0]!r} twice; give "
                                      f"each value once")
            return out
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            out = float(value)
            if not math.isfinite(out):
                raise ValueError(value)
            return out
        return str(value)
    except (TypeError, ValueError):
        raise ExperimentError(f"{name}: parameter {key} must be like {default!r}, "
                              f"not {value!r}") from None
