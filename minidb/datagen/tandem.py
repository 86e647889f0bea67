"""The Wisconsin variant of the NonStop SQL speedup / scaleup benchmark (Englert et al. 1989).

Tandem's benchmark tables were "modeled on" the Wisconsin relation but filled differently:
apart from the two unique keys, every column holds *random* values in a range, and rows are
200 bytes (NonStop SQL 1989 paper, Section 4, table ``f1``). For a table of n rows the paper's
comments give:

    unique1    unique random in [0, n-1]          -> dense-unique permutation, stream 0
    unique2    the primary key, unique random     -> dense-unique permutation, stream 1
    two        random [0..1]
    four       random [0..4]
    ten        random [0..10]
    twenty     random [0..20]
    onepct     random [0..n/100 - 1]
    tenpct     random [0..n/10 - 1]
    twenpct    random [0..n/5 - 1]
    fiftypct   random [0..n/2 - 1]
    hundpct    random [0..n - 1]
    odd1pct    random [1..n/100 - 1]
    even1pct   2 x odd1pct
    stringu1, stringu2, stringu3   random strings of 52 characters

The ranges are taken literally from the paper, including the inclusive upper bounds of four,
ten and twenty (5, 11 and 21 distinct values). Divisions round down, and every range is kept
at least one value wide, so tiny tables still work (with n < 200, odd1pct is always 1).
Strings are 52 random capital letters. Random values come from the counter-based generator in
``_random`` (one stream per column), so any slice of rows is computed on its own.

Byte widths. The paper declares the columns NUMERIC(8) or NUMERIC(4) and says a row is 200
bytes. minidb stores the nine columns with large ranges (unique1, unique2, onepct, tenpct,
twenpct, fiftypct, hundpct, odd1pct, even1pct) as int32 (36 bytes), the four small-domain ones
(two, four, ten, twenty) as int16 (8 bytes), and the three strings as char(52) (156 bytes):
36 + 8 + 156 = 200 bytes, the paper's row size. The split between int16 and int32 is our
choice; the paper does not say how NUMERIC fields were laid out.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from minidb.datagen import _random as rnd
from minidb.datagen._common import build_table, check_seed, check_slice, text_array
from minidb.datagen.dense_unique import dense_unique
from minidb.storage.schema import Schema, char_column, int_column

STRING_WIDTH = 52

SCHEMA = Schema(
    [
        int_column("unique1", "int32"),
        int_column("unique2", "int32"),
        int_column("two", "int16"),
        int_column("four", "int16"),
        int_column("ten", "int16"),
        int_column("twenty", "int16"),
        int_column("onepct", "int32"),
        int_column("tenpct", "int32"),
        int_column("twenpct", "int32"),
        int_column("fiftypct", "int32"),
        int_column("hundpct", "int32"),
        int_column("odd1pct", "int32"),
        int_column("even1pct", "int32"),
        char_column("stringu1", STRING_WIDTH),
        char_column("stringu2", STRING_WIDTH),
        char_column("stringu3", STRING_WIDTH),
    ]
)
MAX_ROWS = (1 << 31) - 1


def ranges(n: int) -> dict[str, tuple[int, int]]:
    """The inclusive [low, high] range of each random integer column for an n-row table."""
    return {
        "two": (0, 1),
        "four": (0, 4),
        "ten": (0, 10),
        "twenty": (0, 20),
        "onepct": (0, max(0, n // 100 - 1)),
        "tenpct": (0, max(0, n // 10 - 1)),
        "twenpct": (0, max(0, n // 5 - 1)),
        "fiftypct": (0, max(0, n // 2 - 1)),
        "hundpct": (0, n - 1),
        "odd1pct": (1, max(1, n // 100 - 1)),
    }


def tandem(rows: int, seed: int = 0, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of the n = ``rows`` row NonStop SQL benchmark table (200 bytes a row)."""
    rows, start, stop = check_slice("tandem", rows, start, stop, max_rows=MAX_ROWS)
    seed = check_seed(seed)
    counters = rnd.rows(start, stop)
    cols: dict[str, object] = {
        "unique1": dense_unique(rows, seed, start, stop, stream=0).astype(np.int32),
        "unique2": dense_unique(rows, seed, start, stop, stream=1).astype(np.int32),
    }
    # Streams 10, 11, ... : one per random column, apart from the permutations' streams.
    for stream, (name, (low, high)) in enumerate(ranges(rows).items(), start=10):
        values = rnd.uniform_int(seed, stream, counters, low, high)
        cols[name] = values.astype(SCHEMA.column(name).numpy_dtype)
    cols["even1pct"] = cols["odd1pct"] * 2
    for stream, name in enumerate(("stringu1", "stringu2", "stringu3"), start=30):
        cols[name] = text_array(
            rnd.random_chars(seed, stream, counters, STRING_WIDTH, ord("A"), 26)
        )
    return build_table(SCHEMA, cols)
