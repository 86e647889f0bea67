"""The cluster catalog: the coordinator's record of the parallel database's tables.

Gamma's host runs the catalog manager: it keeps the description of every relation and how
it is declustered (DeWitt et al. 1988, Section 2.2), while each node keeps its own fragments.
Here that is a ``ClusterCatalog`` of ``ClusterTable`` descriptions: per table its name,
schema, tuple count and column statistics, which is what the SQL translator
(``minidb.sql.translate``) and the parallel planner read of a table. A description holds no
tuples and no pages; how each table is declustered (its partitioner) is kept beside it, in
``ParallelDatabase.schemes``.

In a data directory D the coordinator writes D/cluster.json: the number of nodes, which are
disk nodes, the page size, and per table its schema, tuple count, statistics and partitioning
(the partitioner's kind, columns and what it learned: boundaries, the next node of
round-robin). This module turns descriptions, partitioners and statistics into that JSON and
back; ``minidb.cluster.coordinator`` decides when to write and how to reopen.
"""

from __future__ import annotations

import base64
import pickle
from dataclasses import dataclass, field

import numpy as np

from minidb.catalog import (
    CLUSTER_FILE,
    Catalog,
    ColumnStats,
    _stats_of,
    schema_from_json,
    schema_to_json,
    stats_from_json,
    stats_to_json,
)
from minidb.errors import MinidbError
from minidb.parallel.partitioners import (
    Hash,
    Partitioner,
    PredicateFragments,
    Range,
    RangeUniform,
    RoundRobin,
)
from minidb.storage.schema import Schema

CLUSTER_FORMAT = "minidb-cluster"


@dataclass
class ClusterTable:
    """What the host knows of one declustered relation: its name, schema, tuple count and
    column statistics (the attributes of a node's ``minidb.catalog.Table`` that the translator
    and the planners' estimates read). No tuples, no pages: those are on the disk nodes."""

    name: str
    schema: Schema
    num_records: int = 0
    stats: dict[str, ColumnStats] = field(default_factory=dict)

    def column_stats(self, column: str) -> ColumnStats:
        return self.stats[column.lower()]


class ClusterCatalog(Catalog):
    """The host's tables by case-insensitive name: a node's ``Catalog`` (``get``, ``has``,
    ``names``, ``remove`` and their errors, which ``translate`` relies on) holding
    ``ClusterTable`` descriptions instead of stored tables."""

    def new_table(self, name: str, schema: Schema) -> ClusterTable:
        """Enter a relation that is being stored (no tuples yet: its tuple count and statistics
        are set once its fragments are); an error if the name is taken."""
        return self.add(ClusterTable(name, schema))


def table_to_json(table: ClusterTable, p: Partitioner) -> dict:
    """One table's entry of cluster.json: its description and its partitioning."""
    return {"name": table.name, "schema": schema_to_json(table.schema),
            "records": int(table.num_records),
            "stats": {k: stats_to_json(v) for k, v in table.stats.items()},
            "partitioning": partitioner_to_json(p)}


def table_from_json(entry: dict, num_nodes: int) -> tuple[ClusterTable, Partitioner]:
    """The description and the partitioner (fitted for ``num_nodes`` disk nodes) that
    ``table_to_json`` wrote; a damaged entry is an error naming the table."""
    try:
        schema = schema_from_json(entry["schema"])
        table = ClusterTable(entry["name"], schema)
        table.stats = {k: stats_from_json(v) for k, v in entry["stats"].items()}
        table.num_records = int(entry["records"])
        return table, partitioner_from_json(entry["partitioning"], schema, num_nodes)
    except (KeyError, TypeError, ValueError) as exc:
        raise MinidbError(f"the cluster catalog entry of table {entry.get('name', '?')!r} "
                          f"is damaged ({type(exc).__name__}: {exc})") from None


def stored_roles(stored: dict, where, disk_nodes, diskless_nodes, page_size) -> tuple[int, int]:
    """Disk node count and page size of a stored cluster; asking for others is an error."""
    disk = stored.get("disk_nodes")
    saved_page = stored.get("page_size")
    nodes = stored.get("nodes")
    if not isinstance(disk, list) or not isinstance(saved_page, int) or disk != list(range(len(disk))):
        raise MinidbError(f"{where}/{CLUSTER_FILE} is damaged (disk nodes or page size)")
    asked = disk_nodes if disk_nodes is not None else \
        (None if diskless_nodes is None else nodes - diskless_nodes)
    if asked is not None and asked != len(disk):
        raise MinidbError(f"{where} holds a database with {len(disk)} disk nodes, not {asked}; "
                          "leave disk_nodes / diskless_nodes out to open it")
    if page_size is not None and page_size != saved_page:
        raise MinidbError(f"{where} holds a database with {saved_page}-byte pages, not {page_size}; "
                          "leave page_size out to open it")
    return len(disk), saved_page


def partitioner_to_json(p: Partitioner) -> dict:
    """A fitted partitioner as JSON: kind, columns and what it learned. A user's own class is
    pickled (it must be importable again to reopen); one that cannot be pickled is an error."""
    kind = type(p)
    if kind is RoundRobin:
        return {"kind": "round_robin", "next_node": int(p.next_node)}
    if kind is Hash:
        return {"kind": "hash", "columns": list(p.columns), "seed": int(p.seed)}
    if kind in (Range, RangeUniform):
        bounds = p._bounds
        out = {"kind": p.name, "column": p.column,
               "boundaries": None if p.boundaries is None else [_plain(b) for b in p.boundaries],
               "bounds": None if bounds is None else {
                   "dtype": bounds.dtype.str,
                   "values": [bytes(b).hex() for b in bounds] if bounds.dtype.kind == "S"
                   else bounds.tolist()}}
        if kind is RangeUniform:
            out["sample"] = p.sample
        return out
    if kind is PredicateFragments:
        return {"kind": "predicates", "fragments": {str(k): p.texts[k] for k in p.nodes}}
    try:
        data = pickle.dumps(p)
    except Exception as e:
        raise MinidbError(f"partitioner {p.describe()} cannot be saved in the catalog of a data "
                          f"directory ({type(e).__name__}: {e}); make it picklable or use no "
                          "data_dir") from None
    return {"kind": "pickle", "describe": p.describe(), "data": base64.b64encode(data).decode()}


def partitioner_from_json(d: dict, schema: Schema, num_nodes: int) -> Partitioner:
    """The partitioner ``partitioner_to_json`` wrote, fitted for ``num_nodes`` disk nodes."""
    kind = d["kind"]
    if kind == "pickle":
        try:
            p = pickle.loads(base64.b64decode(d["data"]))
        except Exception as e:
            raise MinidbError(f"cannot load the saved partitioner {d.get('describe')!r} "
                              f"({type(e).__name__}: {e}); is its class importable?") from None
        return p
    if kind == "predicates":
        p = PredicateFragments({int(k): v for k, v in d["fragments"].items()}, schema)
        p.fit(None, num_nodes)
        return p
    if kind == "round_robin":
        p = RoundRobin()
        p.fit(None, num_nodes)
        p.next_node = int(d["next_node"])
        return p
    if kind == "hash":
        p = Hash(*d["columns"], seed=int(d["seed"]), schema=schema)
    elif kind == "range":
        p = Range(d["column"], d["boundaries"])
    elif kind == "range_uniform":
        p = RangeUniform(d["column"], d.get("sample"))
    else:
        raise ValueError(f"unknown partitioner kind {kind!r}")
    Partitioner.fit(p, None, num_nodes)
    if kind in ("range", "range_uniform"):
        b = d["bounds"]
        p.boundaries = d["boundaries"]
        if b is None:
            p._bounds = None
        elif np.dtype(b["dtype"]).kind == "S":
            p._bounds = np.array([bytes.fromhex(v) for v in b["values"]], dtype=b["dtype"])
        else:
            p._bounds = np.array(b["values"], dtype=b["dtype"])
    return p


def _plain(v):
    if isinstance(v, bytes | np.bytes_):
        return bytes(v).decode(errors="replace")
    return v.item() if isinstance(v, np.generic) else v


def merge_stats(schema: Schema, per_node: list[dict]) -> dict:
    """Column statistics of a relation from its fragments' statistics: exact bounds; distinct
    values summed over the fragments and capped at the tuple count (exact for a key, an
    overestimate for a column whose values repeat across nodes)."""
    merged = {}
    for c in schema.columns:
        present = [s for s in (stats_from_json(d[c.name.lower()]) for d in per_node) if s.distinct]
        if not present:
            merged[c.name.lower()] = _stats_of(np.empty(0, dtype=schema.dtype)[c.name])
            continue
        merged[c.name.lower()] = ColumnStats(min(s.min for s in present),
                                             max(s.max for s in present),
                                             sum(s.distinct for s in present))
    return merged


__all__ = ["CLUSTER_FORMAT", "ClusterCatalog", "ClusterTable", "merge_stats", "partitioner_from_json",
           "partitioner_to_json", "stored_roles", "table_from_json", "table_to_json"]
