"""The fuzz loop: rounds of (tables, configuration, queries), each query run on both engines.

``run_fuzz`` runs rounds until it has made the number of executions asked for, alternating the
configuration kinds (``single``, ``parallel``, ``ray``). One round:

1. derives its own random generator from the run's seed and its number (so it can be replayed
   alone: ``--replay SEED:KIND:ROUND``), and draws its tables, its configuration and its queries
   (all before running any, so a query's text never depends on an answer);
2. loads the tables into DuckDB and into minidb (a failure to load is one execution);
3. runs each query on both and classifies the execution (``OUTCOMES``; a hint that cannot be
   followed is dropped and the query run again); a statement that changes data is judged by its
   count and the whole table afterwards (``execute_change``), the round's tables follow the
   change (so a later failure's reproduction starts from the changed data), and a failing change
   ends the round (the engines' tables may differ from then on);
4. shrinks the first failures of each class (drops rows of the tables while the failure stays
   the same) so the reproduction printed is small.
"""

from __future__ import annotations

import random
import re
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb

from minidb.errors import MinidbError

from .configs import Config, TableDesign, sample_config
from .grammar import Query, QueryGenerator, TableSpec, random_tables
from .oracle import compare, duckdb_with, rows_of
from .triage import Failure, classify

# "wrong", "raw_exception" and "refused" are failures; "oracle_error" is skipped; "overflow" is
# minidb's documented NumericOverflowError for a SUM beyond int64 (DuckDB sums into 128 bits)
OUTCOMES = ("ok", "overflow", "wrong", "raw_exception", "refused", "oracle_error")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
HINT_NOT_APPLICABLE = "cannot be followed"  # a hint asked for an index the query cannot use


@dataclass
class Verdict:
    outcome: str
    detail: str = ""
    got: list | None = None
    want: list | None = None


@dataclass
class Stats:
    executions: int = 0
    outcomes: Counter = field(default_factory=Counter)
    per_kind: Counter = field(default_factory=Counter)  # "single" / "parallel" / "ray"
    per_config: Counter = field(default_factory=Counter)  # "single-hash", "parallel-range", ...
    per_nodes: Counter = field(default_factory=Counter)  # parallel and ray: executions by nodes
    failures: list[Failure] = field(default_factory=list)

    def count(self, config: Config, outcome: str) -> None:
        self.executions += 1
        self.outcomes[outcome] += 1
        self.per_kind[config.kind] += 1
        self.per_config[f"{config.kind}-{config.label}"] += 1
        if config.kind != "single":
            self.per_nodes[config.nodes] += 1

    @property
    def bad(self) -> int:
        return self.outcomes["wrong"] + self.outcomes["raw_exception"] + self.outcomes["refused"]

    def by_label(self) -> Counter:
        return Counter(f.label for f in self.failures)


# -- one execution ----------------------------------------------------------------------------
def _exception_text(e: BaseException) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    where = f" (at {frame.filename.split('minidb/')[-1]}:{frame.lineno})" if frame else ""
    message = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {message}" + (where if not isinstance(e, MinidbError) else "")


def run_on_minidb(db, query: Query) -> Verdict | list[tuple]:
    """minidb's rows, or the Verdict for the exception it raised."""
    hint = query.hint
    try:
        try:
            return db.sql(query.sql(), hint=hint).to_pylist()
        except MinidbError as e:
            if hint is None or HINT_NOT_APPLICABLE not in str(e):
                raise
            return db.sql(query.sql()).to_pylist()  # the hint did not apply: run without it
    except MinidbError as e:
        return Verdict("refused", _exception_text(e))
    except Exception as e:  # noqa: BLE001  (any other exception is a crash: that is the finding)
        return Verdict("raw_exception", _exception_text(e))


def execute(db, con: duckdb.DuckDBPyConnection, query: Query) -> Verdict:
    """Run ``query`` on both engines and judge minidb's answer."""
    if query.target is not None:
        return execute_change(db, con, query)
    try:
        want = rows_of(con.execute(query.sql()).fetchall())
        unlimited = rows_of(con.execute(query.sql(with_limit=False)).fetchall()) \
            if query.limit is not None else None
    except duckdb.Error as e:
        return Verdict("oracle_error", f"{type(e).__name__}: {str(e).splitlines()[0]}")
    got = run_on_minidb(db, query)
    if isinstance(got, Verdict):
        got.want = want
        if _documented_overflow(got, want):
            got.outcome = "overflow"  # minidb's documented answer to a SUM beyond 64 bits
        return got
    why = compare(query, got, want, unlimited)
    return Verdict("ok" if why is None else "wrong", why or "", got, want)


def execute_change(db, con: duckdb.DuckDBPyConnection, query: Query) -> Verdict:
    """A statement that changes data (INSERT, UPDATE, DELETE, CREATE TABLE AS): run on both, then
    compare minidb's count of rows changed (its one-row answer) with DuckDB's, and the whole
    target table's contents as bags. A CREATE TABLE AS table is dropped on both afterwards."""
    try:
        want_count = rows_of(con.execute(query.sql()).fetchall())
    except duckdb.Error as e:
        return Verdict("oracle_error", f"{type(e).__name__}: {str(e).splitlines()[0]}")
    table = f"SELECT * FROM {query.target}"
    want = rows_of(con.execute(table).fetchall())
    try:
        got_count = run_on_minidb(db, Query(query.sql()))
        if isinstance(got_count, Verdict):
            got_count.want = want_count
            if _documented_overflow(got_count, want):  # CREATE TABLE AS SELECT SUM(...)
                got_count.outcome = "overflow"
            return got_count
        if got_count and got_count != want_count:
            return Verdict("wrong", f"count {got_count} instead of {want_count}", got_count,
                           want_count)
        got = run_on_minidb(db, Query(table))
        if isinstance(got, Verdict):
            got.want = want
            return got
        why = compare(Query(table, traits=query.traits), got, want, None)
        return Verdict("ok" if why is None else "wrong",
                       "" if why is None else f"table {query.target} after the statement: {why}",
                       got, want)
    finally:
        if query.creates:
            con.execute(f"DROP TABLE IF EXISTS {query.target}")
            if query.target in _tables_of(db):
                db.drop_table(query.target)


def _tables_of(db) -> set[str]:
    try:
        return set(db.tables())
    except Exception:  # noqa: BLE001
        return set()


def _documented_overflow(got: Verdict, want: list[tuple]) -> bool:
    """minidb raised NumericOverflowError for a number beyond int64 (in SQL's answer, or in
    the message: a SUM that a HAVING then drops)."""
    return got.detail.startswith("NumericOverflowError") and \
        (_beyond_int64(want) or _beyond_int64([_numbers_in(got.detail)]))


def _beyond_int64(rows: list[tuple]) -> bool:
    """SQL's answer holds an integer that int64 cannot: DuckDB sums into 128 bits, minidb raises
    NumericOverflowError instead (minidb/sql/translate.py, "Numbers")."""
    return any(isinstance(v, int) and not INT64_MIN <= v <= INT64_MAX for row in rows for v in row)


def _numbers_in(message: str) -> tuple:
    """The integers an error message quotes ("SUM(l) is 9223372039854775807, which ..."): a SUM
    in HAVING may overflow although SQL's answer shows no big number, and the message says
    which value did not fit."""
    return tuple(int(n) for n in re.findall(r"-?\d{19,}", message))


# -- loading ------------------------------------------------------------------------------------
def load(config: Config, tables: list[TableSpec]):
    """Open ``config`` and load ``tables``: (db, None) or (None, Verdict) when loading failed
    (the Verdict's ``got`` then names the tables loaded, the failing one last)."""
    db = None
    done: list[str] = []
    try:
        db = config.open()
        for t in tables:
            done.append(t.name)
            config.load(db, t)
        return db, None
    except MinidbError as e:
        verdict = Verdict("refused", _exception_text(e))
    except Exception as e:  # noqa: BLE001
        verdict = Verdict("raw_exception", _exception_text(e))
    _close(db)
    verdict.got = done
    return None, verdict


def _close(db) -> None:
    if db is not None:
        try:
            db.close()
        except Exception:  # noqa: BLE001  (closing after a crash may fail too; nothing to do)
            pass


def recheck(config: Config, tables: list[TableSpec], query: Query | None) -> Verdict:
    """Run one case from scratch (a fresh database): what shrinking and --replay use."""
    db, failed = load(config, tables)
    if failed is not None:
        failed.got = None
        return failed
    try:
        return execute(db, duckdb_with(tables), query) if query is not None else Verdict("ok")
    finally:
        _close(db)


# -- shrinking ------------------------------------------------------------------------------------
def shrink(failure: Failure, budget: int = 60) -> Failure:
    """Drop rows of the failure's tables (halves, then quarters, ... then single rows) while
    it still fails with the same outcome and class; at most ``budget`` re-runs."""
    tables = list(failure.tables)
    runs = 0
    for ti in range(len(tables)):
        chunk = max(1, len(tables[ti].rows) // 2)
        while chunk >= 1 and runs < budget:
            i = 0
            while i < len(tables[ti].rows) and runs < budget:
                rows = tables[ti].rows
                trial = tables[:ti] + [tables[ti].with_rows(rows[:i] + rows[i + chunk:])] + tables[ti + 1:]
                runs += 1
                if _same_failure(failure, trial):
                    tables = trial
                else:
                    i += chunk
            chunk //= 2
    if tables == failure.tables:
        return failure
    v = recheck(failure.config, tables, failure.query)
    return Failure(failure.outcome, failure.config, tables, failure.query, v.detail, v.got,
                   v.want, failure.where, failure.label, failure.features)


def _same_failure(failure: Failure, tables: list[TableSpec]) -> bool:
    v = recheck(failure.config, tables, failure.query)
    if v.outcome != failure.outcome:
        return False
    trial = Failure(v.outcome, failure.config, tables, failure.query, v.detail, v.got, v.want,
                    features=failure.features)
    return classify(trial) == failure.label


# -- rounds ---------------------------------------------------------------------------------------
def round_rng(seed: int, round_no: int) -> random.Random:
    return random.Random(f"minidb-fuzz:{seed}:{round_no}")


def plan_round(seed: int, round_no: int, kind: str, features: frozenset[str], queries: int,
               ) -> tuple[list[TableSpec], Config, list[Query]]:
    """The round's tables, configuration and queries: a function of its seed alone."""
    rng = round_rng(seed, round_no)
    tables = random_tables(rng, features)
    config = sample_config(rng, kind, tables)
    gen = QueryGenerator(rng, tables, features, parallel=kind != "single")
    return tables, config, [gen.query() for _ in range(queries)]


def run_round(stats: Stats, seed: int, round_no: int, kind: str, features: frozenset[str],
              queries: int, only_query: int | None = None) -> None:
    tables, config, plan = plan_round(seed, round_no, kind, features, queries)
    db, failed = load(config, tables)
    if failed is not None:
        stats.count(config, failed.outcome)
        needed = [t for t in tables if t.name in failed.got]
        _record(stats, Failure(failed.outcome, config, needed, None, failed.detail,
                               where=f"{seed}:{kind}:{round_no}", features=features))
        return
    con = duckdb_with(tables)
    try:
        for qi, query in enumerate(plan):
            if only_query is not None and qi != only_query:
                if qi < only_query and query.target is not None:  # replay the data's changes
                    execute(db, con, query)
                    tables = _current(con, tables, query)
                continue
            v = execute(db, con, query)
            stats.count(config, v.outcome)
            if v.outcome in ("wrong", "raw_exception", "refused"):
                needed = [t for t in tables if t.name in query.tables]
                _record(stats, Failure(v.outcome, config, needed, query, v.detail, v.got, v.want,
                                       f"{seed}:{kind}:{round_no}:{qi}", features=features))
                if query.target is not None:
                    break  # the two engines' tables may differ now: the rest would only echo it
            if query.target is not None and not query.creates and v.outcome != "oracle_error":
                # the data changed: later failures (and their reproductions) start from here
                tables = _current(con, tables, query)
    finally:
        _close(db)
        con.close()


def _current(con: duckdb.DuckDBPyConnection, tables: list[TableSpec], query: Query,
             ) -> list[TableSpec]:
    """``tables`` with the rows DuckDB holds after ``query`` changed its target."""
    if query.creates:
        return tables
    return [t.with_rows(rows_of(con.execute(f"SELECT * FROM {t.name}").fetchall()))
            if t.name == query.target else t for t in tables]


def _record(stats: Stats, failure: Failure) -> None:
    failure.label = classify(failure)
    stats.failures.append(failure)


def run_fuzz(executions: int, seed: int = 1, kinds: tuple[str, ...] = ("single", "parallel"),
             features: frozenset[str] = frozenset(), queries_per_round: int = 25,
             progress: Callable[[Stats, int], None] | None = None) -> Stats:
    """Run rounds until ``executions`` queries have run; kinds alternate round by round."""
    stats = Stats()
    round_no = 0
    while stats.executions < executions:
        kind = kinds[round_no % len(kinds)]
        n = min(queries_per_round, executions - stats.executions)
        run_round(stats, seed, round_no, kind, features, n)
        round_no += 1
        if progress is not None:
            progress(stats, round_no)
    return stats


def shrink_examples(stats: Stats, per_class: int = 1, budget: int = 60) -> dict[str, Failure]:
    """The first failure of each class, shrunk (``per_class`` tried, the smallest kept)."""
    examples: dict[str, Failure] = {}
    tried: Counter = Counter()
    for f in stats.failures:
        if tried[f.label] >= per_class:
            continue
        tried[f.label] += 1
        small = shrink(f, budget)
        best = examples.get(f.label)
        if best is None or _size(small) < _size(best):
            examples[f.label] = small
    return examples


def _size(f: Failure) -> int:
    return sum(len(t.rows) for t in f.tables)


# -- reporting ------------------------------------------------------------------------------------
def summary_line(stats: Stats, seed: int) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.per_kind.items()))
    configs = ", ".join(f"{k} {n}" for k, n in sorted(stats.per_config.items()))
    nodes = ", ".join(f"{k} {n}" for k, n in sorted(stats.per_nodes.items()))
    o = stats.outcomes
    return (f"fuzz: {stats.executions} executions ({kinds}; per configuration: {configs}; "
            f"parallel by nodes: {nodes or 'none'}), {o['wrong']} wrong, "
            f"{o['raw_exception']} raw exceptions, {o['refused']} refused, "
            f"{o['oracle_error']} oracle errors, {o['overflow']} documented overflow errors, "
            f"seed {seed}")


def reproduction(f: Failure) -> str:
    """A failure as a small script: build the configuration, load the data, run the SQL, and
    the two answers."""
    lines = [f"# {f.outcome}: {f.label}", f"# replay: {f.replay_command()}",
             f"# configuration: {f.config.describe()}", f.config.load_script(f.tables)]
    if f.query is None:
        lines.append(f"# loading fails: {f.detail}")
        return "\n".join(lines)
    if f.query.traits:
        lines.append(f"# traits: {', '.join(sorted(f.query.traits))}")
    hint = f", hint={f.query.hint!r}" if f.query.hint else ""
    lines.append(f"db.sql({f.query.sql()!r}{hint}).to_pylist()")
    if f.query.target is not None:  # a change of data: what is compared is the table after it
        lines.append(f"db.sql('SELECT * FROM {f.query.target}').to_pylist()")
    lines.append(f"# minidb: {_show(f.got) if f.got is not None else f.detail}")
    lines.append(f"# duckdb: {_show(f.want)}")
    if f.outcome == "wrong":
        lines.append(f"# ({f.detail})")
        only_got, only_want = _difference(f.got or [], f.want or [])
        lines.append(f"# only in minidb: {_show(only_got, 6)}")
        lines.append(f"# only in duckdb: {_show(only_want, 6)}")
    return "\n".join(lines)


def _difference(got: list, want: list) -> tuple[list, list]:
    """Rows of ``got`` not matched in ``want`` and the reverse (exact matching, as a hint)."""
    left = Counter(map(repr, want))
    only_got = []
    for r in got:
        if left[repr(r)] > 0:
            left[repr(r)] -= 1
        else:
            only_got.append(r)
    rest = Counter(map(repr, got))
    only_want = []
    for r in want:
        if rest[repr(r)] > 0:
            rest[repr(r)] -= 1
        else:
            only_want.append(r)
    return only_got, only_want


def cross_check(f: Failure) -> str:
    """The failure's outcome on the plainest configuration (one node, heap files, no index): if
    that is right, the bug is in what the failing configuration adds (an index, a hash file,
    partitioning, the parallel operators)."""
    if f.query is None:
        return "not tried (loading failed)"
    plain = Config("single", "heap", 4096, 1024, "lru", 1, {t.name: TableDesign() for t in f.tables})
    return recheck(plain, f.tables, f.query).outcome


def _show(rows: list | None, most: int = 12) -> str:
    if rows is None:
        return "-"
    text = repr(rows[:most])
    return text + (f" ... ({len(rows)} rows)" if len(rows) > most else f" ({len(rows)} rows)")


def failure_report(stats: Stats, examples: dict[str, Failure]) -> str:
    """Counts per class, the places of every failure, and one shrunk reproduction per class."""
    out = []
    for label, n in stats.by_label().most_common():
        where = [f.where for f in stats.failures if f.label == label]
        more = f" ... ({len(where)} in all)" if len(where) > 8 else ""
        out.append(f"== {n} x {label}\n   at {' '.join(where[:8])}{more}")
        if label in examples:
            out.append(reproduction(examples[label]))
            out.append(f"# the same query on a single-node heap: {cross_check(examples[label])}")
        out.append("")
    return "\n".join(out)
