"""The cluster catalog: the coordinator's record of the parallel database's tables.

Gamma's host keeps the catalog of every relation and how it is declustered (DeWitt et al.
1988, Section 2.2); each node keeps its own fragments. In a data directory D the coordinator
writes D/cluster.json: the number of nodes, which are disk nodes, the page size, and per
table its schema, tuple count, statistics and partitioning (the partitioner's kind, columns
and what it learned: boundaries, the next node of round-robin). This module turns
partitioners and statistics into that JSON and back; ``minidb.cluster.coordinator`` decides
when to write and how to reopen.
"""

from __future__ import annotations

import base64
import pickle

import numpy as np

from minidb.catalog import (
    CLUSTER_FILE,
    ColumnStats,
    _stats_of,
    stats_from_json,
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


__all__ = ["CLUSTER_FORMAT", "merge_stats", "partitioner_from_json", "partitioner_to_json", "stored_roles"]
