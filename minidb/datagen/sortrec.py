"""Sort records: 100-byte records with a 10-byte random key, the layout of the sort benchmarks.

The Datamation sort benchmark ("A Measure of Transaction Processing Power", Anon et al. 1985)
and its successor tool ``gensort`` (sortbenchmark.org) sort records of 100 bytes whose first 10
bytes are the key; Graefe and Thakkar's Volcano sort (1992) is measured on 1,000,000 records of
100 bytes, the workload that Datamation article suggests. minidb keeps that layout:

    key      char(10)   10 random printable ASCII characters, codes 33..126
    payload  char(90)   the record number in 20 zero-padded decimal digits, then 70 filler
                        letters (an alphabet that starts at a letter set by the record number)

Codes 33..126 leave out the space and the NUL byte, which a char(n) column would strip from
the end of a value, so every key is exactly 10 bytes and compares bytewise like gensort's.
The payload is not gensort's byte for byte (gensort writes the number in hex and uses other
filler); only the sizes and the key's role are the same. The record number in the payload
lets a test check that a sort kept every record.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from minidb.datagen import _random as rnd
from minidb.datagen._common import build_table, check_seed, check_slice, decimal_digits, text_array
from minidb.storage.schema import Schema, char_column

KEY_WIDTH, PAYLOAD_WIDTH, NUMBER_WIDTH = 10, 90, 20
SCHEMA = Schema([char_column("key", KEY_WIDTH), char_column("payload", PAYLOAD_WIDTH)])
_KEY_STREAM = 60


def payloads(numbers: np.ndarray) -> np.ndarray:
    """(rows, 90) uint8 matrix: 20 decimal digits of the record number, then 70 letters."""
    numbers = np.asarray(numbers, dtype=np.uint64)
    mat = np.empty((len(numbers), PAYLOAD_WIDTH), dtype=np.uint8)
    mat[:, :NUMBER_WIDTH] = decimal_digits(numbers, NUMBER_WIDTH)
    # Row r of the filler table is the alphabet started at letter r, 70 letters long.
    shift = np.arange(26)[:, None] + np.arange(PAYLOAD_WIDTH - NUMBER_WIDTH)[None, :]
    filler = shift % 26 + ord("A")
    first = (numbers % np.uint64(26)).astype(np.intp)
    mat[:, NUMBER_WIDTH:] = filler.astype(np.uint8)[first]
    return mat


def sortrec(rows: int, seed: int = 0, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of ``rows`` 100-byte sort records (10-byte random key + 90-byte payload)."""
    rows, start, stop = check_slice("sortrec", rows, start, stop)
    seed = check_seed(seed)
    counters = rnd.rows(start, stop)
    cols = {
        "key": text_array(rnd.random_chars(seed, _KEY_STREAM, counters, KEY_WIDTH, 33, 94)),
        "payload": text_array(payloads(counters)),
    }
    return build_table(SCHEMA, cols)
