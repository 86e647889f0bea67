"""The sort benchmark's records in Volcano's buffer: pages, clusters and alignment.

Graefe and Thakkar sort 1,000,000 records of 100 bytes (§3.2). Volcano's page is 4 KB and its
unit of I/O and buffering, the *cluster*, is a whole number of pages (§4.1: 4 KB at first, 32 KB
from §4.1 on). Records are padded to an alignment boundary (§4.2): 1 byte (packed), 4 bytes (the
80386 word) or 16 bytes (a cache line), and a record never spans two pages. A 100-byte record
needs no padding for 1 or 4 bytes and 12 bytes for 16 (§6.3: "12 bytes of padding per record").

Records are numpy structured arrays ``key S10, payload S90`` (``minidb.datagen.sortrec``): numpy
compares ``S10`` bytewise, which is the sort order of the benchmark's keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from minidb.datagen.sortrec import KEY_WIDTH, PAYLOAD_WIDTH, sortrec
from minidb.errors import MinidbError

RECORD_BYTES = KEY_WIDTH + PAYLOAD_WIDTH
RECORD_DTYPE = np.dtype([("key", f"S{KEY_WIDTH}"), ("payload", f"S{PAYLOAD_WIDTH}")])
PAGE_BYTES = 4096  # §3.2: "Volcano's page size was set to 4 KB"
ALIGNMENTS = (1, 4, 16)  # §4.2


@dataclass(frozen=True)
class Layout:
    """How records sit in the buffer: their padded size, per page and per cluster."""

    cluster_bytes: int = PAGE_BYTES
    alignment: int = 1
    page_bytes: int = PAGE_BYTES

    def __post_init__(self) -> None:
        if self.alignment not in ALIGNMENTS:
            raise MinidbError(f"record alignment must be one of {ALIGNMENTS} bytes, "
                              f"not {self.alignment}")
        if self.cluster_bytes < self.page_bytes or self.cluster_bytes % self.page_bytes:
            raise MinidbError(f"a cluster is a whole number of {self.page_bytes}-byte pages; "
                              f"{self.cluster_bytes} bytes is not")

    @property
    def record_bytes(self) -> int:
        """A record's size with its padding."""
        return -(-RECORD_BYTES // self.alignment) * self.alignment

    @property
    def records_per_cluster(self) -> int:
        return (self.cluster_bytes // self.page_bytes) * (self.page_bytes // self.record_bytes)

    def clusters(self, records: int) -> int:
        """Clusters that ``records`` records fill (the last one may be partial)."""
        return -(-records // self.records_per_cluster)


def sort_records(rows: int, seed: int = 0) -> np.ndarray:
    """``rows`` sortrec records as a structured array (``RECORD_DTYPE``)."""
    return from_table(sortrec(rows, seed=seed))


def from_table(table: pa.Table) -> np.ndarray:
    """A sortrec table (``key`` char(10), ``payload`` char(90)) as a structured array."""
    out = np.empty(table.num_rows, dtype=RECORD_DTYPE)
    for name, width in (("key", KEY_WIDTH), ("payload", PAYLOAD_WIDTH)):
        column = table.column(name).combine_chunks()
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int32,
                                count=len(column) + 1, offset=column.offset * 4)
        if len(column) and not np.all(np.diff(offsets) == width):
            raise MinidbError(f"sort records must have {width}-byte {name}s")
        data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
        out[name] = data[offsets[0]:offsets[-1]].view(f"S{width}") if len(column) else b""
    return out


def to_table(records: np.ndarray) -> pa.Table:
    """Records back as a two-column table of strings (for DuckDB and the tests)."""
    return pa.table({"key": pa.array(records["key"].astype(str)),
                     "payload": pa.array(records["payload"].astype(str))})
