"""The ``minidb`` command.

    minidb datagen NAME --rows N --seed S --out FILE.parquet   generate a benchmark relation
    minidb demo [--rows N]                                     generate Wisconsin data, load it,
                                                               run the paper's selections and print
                                                               rows, access paths and counters
    minidb sql QUERY --table NAME=FILE.parquet ...             run one statement over Parquet files

User mistakes (unknown generator, bad page size, unsupported SQL ...) print one line on stderr
and exit with status 2; no traceback. Later issues add ``list``, ``run``, ``reproduce``, ``report``.
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
    """Turn a MinidbError into one line on stderr and exit status 2."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MinidbError as err:
            click.echo(f"minidb: error: {err}", err=True)
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
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Parquet file to write.")
@_user_errors
def datagen(name: str, rows: int, seed: int, out: Path) -> None:
    """Generate relation NAME (wisconsin, tandem, emp, dept, sortrec, intpairs) as Parquet."""
    from minidb import datagen as dg

    start = time.perf_counter()
    table = dg.generate(name, rows, seed=seed)
    if out.parent and not out.parent.exists():
        raise MinidbError(f"directory {out.parent} does not exist; create it or choose another --out")
    dg.write_parquet(table, out)
    click.echo(f"wrote {table.num_rows:,} {name} tuples to {out} in {time.perf_counter() - start:.2f} s")


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


if __name__ == "__main__":  # pragma: no cover
    main()
