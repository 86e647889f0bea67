"""Which access path the optimizer picks for the selections through Gamma's non-clustered index,
at every disk page size of Section 5.2.2 (DeWitt, Ghandeharizadeh, Schneider 1988).

``gamma.selection`` records the planner's choice at the paper's 4 KB pages for each relation size
(Table 1); ``gamma.page_size`` forces the index for its 1% selection (Figure 8 plots that query
at every page size), so it records no choice. This experiment asks the planner, with no hint, on
the 8-node machine of Figures 6-9 (100,000 tuples), at each page size from 2 to 32 KB. The finding
``gamma.optimizer_scans_for_10pct`` compares these choices with the ones the paper reports.

Why it is worth asking: minidb's planner uses a non-clustered index when the estimated matches
are fewer than the fragment's data pages (the rule §5.1 reasons with: about 100 I/Os against 588
pages). How many tuples a page holds grows with the page, so the answer can change with the page
size even though the query does not.
"""

from __future__ import annotations

from minidb.experiments.gamma import (
    FIGURE_NODES,
    FIGURE_TUPLES,
    load_wisconsin,
    paper_machine,
    scaled,
    select_into,
)
from minidb.experiments.machines import measure
from minidb.experiments.registry import Params, Progress, experiment, make_row

#: the two selections through the non-clustered index on unique2
QUERIES = ("select_1pct_nonclustered_index", "select_10pct_nonclustered_index")


@experiment("gamma.access_paths", title="The optimizer's choice for the non-clustered index "
                                        "selections, 2 to 32 KB pages on 8 nodes",
            references=("Figure 8",),
            defaults={"scale": 1.0, "page_sizes": [2048, 4096, 8192, 16384, 32768],
                      "nodes": FIGURE_NODES, "seed": 1, "backend": "inline"},
            quick={})
def access_paths(p: Params, progress: Progress) -> list[dict]:
    name = "gamma.access_paths"
    tuples = scaled([FIGURE_TUPLES], p["scale"])[0]
    progress.start(len(p["page_sizes"]))
    rows = []
    for size in sorted(p["page_sizes"]):
        with paper_machine("gamma", p["backend"], p["nodes"], size,
                           buffer_page_size=max(p["page_sizes"])) as db:
            load_wisconsin(db, tuples, p["seed"], "gamma", relations=("indexed",))
            for query in QUERIES:
                m = measure(db, select_into(query, tuples), drop="result")
                used = any(kind != "heap_scan" for kind in m.access_paths)
                params = {"system": "gamma", "tuples": tuples, "nodes": p["nodes"],
                          "page_size": size, "query": query, "seed": p["seed"],
                          "backend": p["backend"], "access_paths": list(m.access_paths)}
                rows.append(make_row(name, "", query, f"page_{size // 1024}kb", params,
                                     "used_index", 1.0 if used else 0.0, "flag"))
        progress.advance(f"{size // 1024} KB pages")
    return rows
