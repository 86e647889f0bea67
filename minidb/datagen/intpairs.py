"""Integer pairs: the two-column tables of the LH* / Monet experiments (Karlsson et al. 1997).

The LH* on Monet study (Section 5) queries a distributed table ``big`` and a 100,000-entry
local table ``t5``; both hold pairs of integers (int, int), the values are unique and the data
is not stored sorted. Its partition-size table (Section 5.1) counts 8 bytes a pair
(1 M pairs = 8 MB).

minidb builds such a table as (key int32, value int32), 8 bytes a row: ``key`` and ``value``
are two unrelated dense-unique permutations of 0..rows-1 (streams 0 and 1), so each column
holds every value once and neither is sorted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from minidb.datagen._common import build_table, check_seed, check_slice
from minidb.datagen.dense_unique import dense_unique
from minidb.storage.schema import Schema, int_column

SCHEMA = Schema([int_column("key", "int32"), int_column("value", "int32")])
MAX_ROWS = (1 << 31) - 1


def intpairs(rows: int, seed: int = 0, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of ``rows`` (key, value) pairs, each column a permutation of 0..rows-1."""
    rows, start, stop = check_slice("intpairs", rows, start, stop, max_rows=MAX_ROWS)
    seed = check_seed(seed)
    cols = {
        "key": dense_unique(rows, seed, start, stop, stream=0).astype(np.int32),
        "value": dense_unique(rows, seed, start, stop, stream=1).astype(np.int32),
    }
    return build_table(SCHEMA, cols)
