"""The Wisconsin benchmark relation, as used by the Gamma database machine (DeWitt et al. 1988).

Sixteen attributes: thirteen 4-byte integers and three 52-byte strings, 208 bytes a tuple
(Gamma paper, Section 4, which scaled the original 1,000 and 10,000 tuple relations up to
100,000 and 1,000,000 tuples). Definitions, as recorded in docs/facts.md from DeWitt's benchmark
chapter, for a relation of N tuples:

    unique1         0..N-1, each once, scrambled (a dense-unique permutation)
    unique2         0..N-1, each once, scrambled by a *different* permutation (see below)
    two, four, ten, twenty          unique1 mod 2, 4, 10, 20
    onePercent      unique1 mod 100     (100 groups of N/100 tuples)
    tenPercent      unique1 mod 10
    twentyPercent   unique1 mod 5
    fiftyPercent    unique1 mod 2
    unique3         unique1
    evenOnePercent  onePercent * 2
    oddOnePercent   onePercent * 2 + 1
    stringu1        convert(unique1): 7 letters, base 26 with 'A' = 0, last digit rightmost,
                    then 45 'x' (1 -> 'AAAAAAB' + 45 'x')
    stringu2        convert(unique2)
    string4         'AAAA', 'HHHH', 'OOOO', 'VVVV' in turn by row number, then 48 'x'

unique2. In the benchmark's own setup unique2 runs 0..N-1 in row order (it is the clustering
key). The Gamma paper instead asks that unique1 and unique2 both be unique in every tuple *and
uncorrelated* with each other, and loads the relation partitioned on unique1. minidb follows
Gamma: unique2 is a second dense-unique permutation, made with a different primitive root
(stream 1) from unique1's (stream 0), so their correlation is near zero. Tests check
|pearson(unique1, unique2)| < 0.05. Row order is the generator's order, and string4 cycles by
the global row number, so a slice [start, stop) is exactly those rows of the whole relation.

Strings are built as uint8 matrices and passed to Arrow without copying (``_common.text_array``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from minidb.datagen._common import (
    base26_letters,
    build_table,
    check_seed,
    check_slice,
    filled,
    text_array,
)
from minidb.datagen.dense_unique import dense_unique
from minidb.storage.schema import Schema, char_column, int_column

STRING_WIDTH = 52
SIGNIFICANT = 7  # letters of a convert()ed number; the rest is 'x' padding

INT_COLUMNS = (
    "unique1",
    "unique2",
    "two",
    "four",
    "ten",
    "twenty",
    "onePercent",
    "tenPercent",
    "twentyPercent",
    "fiftyPercent",
    "unique3",
    "evenOnePercent",
    "oddOnePercent",
)
STRING_COLUMNS = ("stringu1", "stringu2", "string4")

SCHEMA = Schema(
    [int_column(name, "int32") for name in INT_COLUMNS]
    + [char_column(name, STRING_WIDTH) for name in STRING_COLUMNS]
)
MAX_ROWS = (1 << 31) - 1  # values must fit in int32


def convert(values: np.ndarray) -> np.ndarray:
    """The benchmark's convert(): a (rows, 52) uint8 matrix, 7 base-26 letters then 45 'x'."""
    mat = filled(len(values), STRING_WIDTH, b"x")
    base26_letters(values, SIGNIFICANT, out=mat[:, :SIGNIFICANT])
    return mat


def string4(start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of string4: AAAA, HHHH, OOOO, VVVV by global row number, then 'x'."""
    mat = filled(stop - start, STRING_WIDTH, b"x")
    letter = (np.arange(start, stop, dtype=np.int64) % 4 * 7 + ord("A")).astype(np.uint8)
    mat[:, :4] = letter[:, None]
    return mat


def wisconsin(rows: int, seed: int = 0, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of the N = ``rows`` tuple Wisconsin relation (208 bytes a tuple)."""
    rows, start, stop = check_slice("wisconsin", rows, start, stop, max_rows=MAX_ROWS)
    seed = check_seed(seed)
    unique1 = dense_unique(rows, seed, start, stop, stream=0).astype(np.int32)
    unique2 = dense_unique(rows, seed, start, stop, stream=1).astype(np.int32)
    one_percent = unique1 % 100
    cols = {
        "unique1": unique1,
        "unique2": unique2,
        "two": unique1 % 2,
        "four": unique1 % 4,
        "ten": unique1 % 10,
        "twenty": unique1 % 20,
        "onePercent": one_percent,
        "tenPercent": unique1 % 10,
        "twentyPercent": unique1 % 5,
        "fiftyPercent": unique1 % 2,
        "unique3": unique1,
        "evenOnePercent": one_percent * 2,
        "oddOnePercent": one_percent * 2 + 1,
        "stringu1": text_array(convert(unique1)),
        "stringu2": text_array(convert(unique2)),
        "string4": text_array(string4(start, stop)),
    }
    return build_table(SCHEMA, cols)
