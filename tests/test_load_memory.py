"""A bulk load's peak memory does not grow with the table (issue 17 item 3).

Each load runs in a fresh subprocess and reports its peak resident memory (``ru_maxrss``) over
its resident memory just before the load. The input comes from ``generate_batches``, so no
whole table exists anywhere: what the load holds is a few batches, the statistics' bitmaps of
the dense integer columns (about two bytes a distinct value) and fixed costs (modules imported
on first use). Loading 4x the rows must add well under the data's own size: the bar is 20% of
the 600,000 added tuples' 125 MB. A load that held the table (the old whole-table path held it
about three times over) would add several hundred MB; the batched one adds a few MB. No wall
clock is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BATCH = 32_768

PROBE = """
import json, os, resource, sys
import minidb
from minidb.datagen import generate_batches

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

rows, batch, nodes = (int(a) for a in sys.argv[1:4])
db = minidb.connect() if nodes == 1 else minidb.connect(nodes=nodes, backend="inline")
db.create_table("warm", generate_batches("wisconsin", 1000, batch_rows=batch))  # imports
before = rss()
db.create_table("w", generate_batches("wisconsin", rows, batch_rows=batch), batch_rows=batch)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
assert db.sql("SELECT COUNT(*) FROM w").to_pylist() == [(rows,)]
db.close()
print(json.dumps({"over": peak - before}))
"""


def _peak_over(rows: int, nodes: int) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, str(rows), str(BATCH), str(nodes)],
                         capture_output=True, text=True, check=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])["over"]


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("nodes", [1, 2])
def test_load_memory_does_not_grow_with_the_table(nodes):
    small, large = _peak_over(200_000, nodes), _peak_over(800_000, nodes)
    added_data = (800_000 - 200_000) * 208
    assert large - small < 0.2 * added_data, (small, large)
