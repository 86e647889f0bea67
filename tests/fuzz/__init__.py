"""Differential fuzzing: random data and random SQL, run on minidb and on DuckDB, answers compared.

DuckDB is the *oracle*: a mature engine that we trust to give the right answer. The fuzzer makes
up a few small tables (``grammar.random_tables``), loads the same Arrow data into DuckDB and into
one minidb configuration (``configs``: a single node with some page size, buffer policy and file
organization, or the parallel engine with 1 to 8 nodes and some partitioning; half the time also a
join plug-in and a small memory budget), then asks both the
same random queries (``grammar.QueryGenerator``) and compares the rows (``oracle.compare``).

Everything is driven by one seed. A *round* is one data set, one configuration and a few dozen
queries; its seed is derived from the run's seed and the round number, so any failure can be
replayed alone (``python -m tests.fuzz --replay SEED:ROUND``). A failing case is shrunk (rows are
dropped from its tables while it keeps failing) and printed as a small Python script that
reproduces it.

Each execution is classified (``runner.Outcome``):

* ``ok``: same rows as DuckDB;
* ``wrong``: different rows (a wrong answer, the worst kind of bug);
* ``raw_exception``: an exception that is not a ``MinidbError`` (a crash);
* ``refused``: a ``MinidbError`` for a query the grammar says minidb supports;
* ``oracle_error``: DuckDB itself rejected the query (skipped; the generator avoids these);
* ``overflow``: minidb raised ``NumericOverflowError`` where SQL's answer is an integer beyond
  64 bits (a SUM): minidb's documented rule, so not a failure.

SQL that minidb does not support yet is generated only when its feature flag is on
(``grammar.FEATURES``). Command line: ``python -m tests.fuzz --help``.
"""
