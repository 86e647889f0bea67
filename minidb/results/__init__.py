"""Results of experiment runs, and the papers' published numbers to compare them with.

``reference`` reads the reference cells transcribed from the five papers
(``datasets/reference/*.csv``) and checks them line by line. ``store`` keeps every run of an
experiment and the tidy rows it produced in one DuckDB file, next to a copy of the reference
cells, and answers "what did the latest runs reproduce, and how close is it to the paper?" in
SQL (``ResultsStore.compare``).

Quick tour::

    from minidb.results import ResultsStore

    store = ResultsStore()                      # $MINIDB_RESULTS or the user's cache directory
    with store.record_run("gamma.selection", "gamma", {"rows": 100_000}, profile="gamma") as run:
        run.add({"reference": "Table 1", "row": "select_1pct_nonindexed",
                 "column": "gamma_100000", "metric": "response_time", "value": 20.1,
                 "unit": "s", "clock": "modeled", "parameters": {}})
    for cell in store.compare("gamma"):
        print(cell["row"], cell["column"], cell["reproduced"], cell["published"], cell["ratio"])
"""

from minidb.results.reference import (
    PAPERS,
    REFERENCE_COLUMNS,
    REFERENCE_DIR_ENV,
    REFERENCE_SCHEMA,
    STATUSES,
    MissingReferenceError,
    ReferenceDataError,
    ReferenceSnapshot,
    load_reference,
    parse_reference_csv,
    reference_checksum,
    reference_dir,
    reference_files,
    snapshot_reference,
)
from minidb.results.store import (
    CLOCKS,
    DEFAULT_TIMEOUT_S,
    ROW_KEYS,
    RUN_COLUMNS,
    RUN_STATUSES,
    SCHEMA_VERSION,
    STORE_ENV,
    ResultsDataError,
    ResultsStore,
    ResultsStoreError,
    RunRecord,
    RunStateError,
    StoreBusyError,
    StoreCorruptError,
    StoreLocationError,
    default_store_path,
    git_revision,
)

__all__ = [
    "CLOCKS",
    "DEFAULT_TIMEOUT_S",
    "PAPERS",
    "REFERENCE_COLUMNS",
    "REFERENCE_DIR_ENV",
    "REFERENCE_SCHEMA",
    "ROW_KEYS",
    "RUN_COLUMNS",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "STATUSES",
    "STORE_ENV",
    "MissingReferenceError",
    "ReferenceDataError",
    "ReferenceSnapshot",
    "ResultsDataError",
    "ResultsStore",
    "ResultsStoreError",
    "RunRecord",
    "RunStateError",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreLocationError",
    "default_store_path",
    "git_revision",
    "load_reference",
    "parse_reference_csv",
    "reference_checksum",
    "reference_dir",
    "reference_files",
    "snapshot_reference",
]
