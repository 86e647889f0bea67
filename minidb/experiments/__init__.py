"""The papers' experiments: registry, runners and findings (see ``registry`` for the contract)."""

from minidb.experiments.registry import (
    PAPERS,
    Experiment,
    ExperimentError,
    Progress,
    experiment,
    experiments,
    get_experiment,
    make_row,
    run_experiment,
)

__all__ = ["PAPERS", "Experiment", "ExperimentError", "Progress", "experiment", "experiments",
           "get_experiment", "make_row", "run_experiment"]
