"""The machines the papers measured, built from minidb parts, and one cold measurement on them.

``build`` opens a parallel minidb shaped like a paper's machine (its node count, page size,
buffer pool from the profile's memory, backend); ``measure`` runs one statement from a cold
buffer pool, as the papers measured relations larger than memory, and prices its counters with
the machine's hardware profile (``minidb.cost``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from minidb.cluster.coordinator import ParallelDatabase
from minidb.cluster.scheduler import model_phases
from minidb.cost.profiles import HardwareProfile, get_profile

MIN_BUFFER_PAGES = 16


@contextlib.contextmanager
def runtime(backend: str | None, purpose: str = "") -> Iterator[None]:
    """One local Ray instance and one pool of node actors for everything run inside, when
    ``backend`` is "ray": each machine built inside takes its actors from the pool (renewed,
    so it starts as a fresh machine) and gives them back when it closes, instead of starting
    Ray and its actors again (``minidb.cluster.backends.node_pool``). Blocks nest: ``minidb
    reproduce`` opens one over a whole paper, each experiment one of its own, named by
    ``purpose`` (the experiment) in messages about starting nodes. The outermost block kills the
    pooled actors and shuts Ray down, unless Ray was already running. Nothing to do for
    "inline"."""
    if backend != "ray":
        yield
        return
    import ray

    from minidb.cluster.backends import node_pool, start_ray

    started = not ray.is_initialized()
    if started:
        start_ray()  # a new local instance, or one line saying why it could not start
    try:
        with node_pool(purpose):
            yield
    finally:
        if started:
            ray.shutdown()


def scaled_fixed_costs(profile: str | HardwareProfile, scale: float) -> HardwareProfile:
    """``profile`` with its fixed per-query costs (operator startup, control messages, a
    Teradata step's overhead) multiplied
    by ``scale``: a run on a relation ``scale`` times the paper's then keeps the paper's ratio of
    fixed to per-tuple work, so ratios such as speedup and scaleup stay comparable (similarity
    scaling, as a wind tunnel scales a model). Absolute times are then ``scale`` times the
    full-size ones. At scale 1 the profile is unchanged."""
    base = get_profile(profile)
    if scale >= 1:
        return base
    note = f"similarity scaling: {base.name}'s value x scale {scale:g} (minidb.experiments)"
    return base.replace(operator_startup_ms=base.operator_startup_ms * scale,
                        control_message_ms=base.control_message_ms * scale,
                        step_overhead_ms=base.step_overhead_ms * scale,
                        sources={"operator_startup_ms": note, "control_message_ms": note,
                                 "step_overhead_ms": note})


def build(nodes: int, profile: str | HardwareProfile, page_size: int = 4096,
          backend: str = "inline", disk_nodes: int | None = None,
          buffer_pages: int | None = None, rid_fetch: str = "sorted",
          buffer_policy: str = "lru", memory_pages: int | None = None) -> ParallelDatabase:
    """A parallel database of ``nodes`` nodes priced with ``profile``. Each node's buffer pool
    holds ``buffer_pages`` pages, by default as many as the profile's memory per node (at least
    16), replaced by the registered ``buffer_policy``; ``rid_fetch`` is how its non-clustered
    index scans fetch records."""
    if buffer_pages is None:
        buffer_pages = get_profile(profile).memory_bytes // page_size
    return ParallelDatabase(nodes=nodes, backend=backend, page_size=page_size, profile=profile,
                            disk_nodes=disk_nodes, rid_fetch=rid_fetch,
                            buffer_pages=max(MIN_BUFFER_PAGES, buffer_pages),
                            buffer_policy=buffer_policy, memory_pages=memory_pages)


@dataclass(frozen=True)
class Measurement:
    """One statement's clocks and what it did."""

    modeled_s: float
    wall_s: float
    rows: int
    bottleneck: str
    """The resource of the slowest node in the longest phase: cpu, disk, net or startup."""
    access_paths: tuple[str, ...]
    """Operator kinds that read the relation (heap_scan, index_scan, clustered_index_scan...)."""
    counters: dict
    slowest_cpu_s: float = 0.0
    """CPU seconds of the slowest node of the longest phase."""
    slowest_disk_s: float = 0.0
    """Disk seconds of that node."""
    per_node: dict | None = None
    """Each node's counters (phases summed), e.g. what its join counted under ``join``."""


ACCESS_KINDS = ("heap_scan", "index_scan", "clustered_index_scan", "hash_lookup",
                "dense_index_scan")


def measure(db: ParallelDatabase, statement: str, drop: str | None = None,
            startup: str = "per_node",
            extra_work: Callable[[list[dict]], list[dict]] | None = None) -> Measurement:
    """Run ``statement`` from a cold buffer pool and price it on the database's profile;
    ``drop`` names a result relation to drop afterwards (CREATE TABLE AS). ``extra_work`` maps
    the statement's phases (``{node: counters}`` each) to the phases priced, with work that
    minidb counted but does not do itself added (NonStop SQL's audit log: ``tandem.audit_log``);
    ``per_node`` then sums those phases."""
    db.clear_buffer_pools()
    result = db.sql(statement)
    phases = extra_work(result.phases) if extra_work else result.phases
    modeled = model_phases(phases, result.scheduler_messages, db.profile, db.page_size,
                           startup=startup)
    longest = max(modeled.phases, key=lambda ph: ph.total_s)
    per_node = result.per_node
    if extra_work:
        per_node = {}
        for phase in phases:
            for node, c in phase.items():
                per_node[node] = _sum_counters(per_node.get(node, {}), c)
    kinds = set()
    for counters in per_node.values():
        kinds |= {k for k, n in counters.get("operators", {}).items() if n and k in ACCESS_KINDS}
    if drop is not None:
        db.drop_table(drop)
    slowest = longest.nodes.get(longest.slowest_node)
    return Measurement(modeled.total_s, result.wall_s, result.rows, longest.bottleneck,
                       tuple(sorted(kinds)), dict(result.counters),
                       slowest.cpu_s if slowest else 0.0, slowest.disk_s if slowest else 0.0,
                       dict(per_node))


def _sum_counters(a: dict, b: dict) -> dict:
    """Two nodes' counter dicts added key by key (nested dicts such as ``tuples`` too)."""
    out = dict(a)
    for key, value in b.items():
        out[key] = (_sum_counters(out.get(key, {}), value) if isinstance(value, dict)
                    else out.get(key, 0) + value)
    return out
