"""Sort records: 100-byte records with a 10-byte random key, the layout of the sort benchmarks.

The Datamation sort benchmark ("A Measure of Transaction Processing Power", Anon et al. 1985)
and its successor tool ``gensort`` (sortbenchmark.org) sort records of 100 bytes whose first 10
bytes are the key; the Volcano parallel-sort paper (Graefe 1992) tunes a sort on data of this
kind. minidb keeps that layout:

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
PRINTABLE = bytes(range(33, 127))
SCHEMA = Schema([char_column("key", KEY_WIDTH), char_column("payload", PAYLOAD_WIDTH)])
_KEY_STREAM = 60


def payloads(numbers: np.ndarray) -> np.ndarray:
    """(rows, 90) uint8 matrix: 20 decimal digits of the record number, then 70 letters."""
    numbers = np.asarray(numbers, dtype=np.uint64)
    mat = np.empty((len(numbers), PAYLOAD_WIDTH), dtype=np.uint8)
    mat[:, :NUMBER_WIDTH] = decimal_digits(numbers, NUMBER_WIDTH)
    first = (numbers % np.uint64(26)).astype(np.int64)
    j = np.arange(PAYLOAD_WIDTH - NUMBER_WIDTH, dtype=np.int64)
    mat[:, NUMBER_WIDTH:] = (first[:, None] + j[None, :]) % 26 + ord("A")
    return mat


def sortrec(rows: int, seed: int = 0, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of ``rows`` 100-byte sort records (10-byte random key + 90-byte payload)."""
    rows, start, stop = check_slice("sortrec", rows, start, stop)
    seed = check_seed(seed)
    counters = rnd.rows(start, stop)
    cols = {
        "key": text_array(rnd.random_chars(seed, _KEY_STREAM, counters, KEY_WIDTH, PRINTABLE)),
        "payload": text_array(payloads(counters)),
    }
    return build_table(SCHEMA, cols)
