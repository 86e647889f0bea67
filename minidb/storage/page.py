"""Fixed-size pages with a header, a checksum and a slot bitmap.

A *page* is the unit of disk I/O and of buffering (Gamma paper, Section 5.2.2 varies it from
2 KB to 32 KB; Volcano, Section 2, groups pages into larger *clusters* per I/O). Every page of
every file in minidb starts with the same 16-byte header:

    offset  size  field
    0       4     checksum   CRC-32 of bytes 4..page_size, folded with the file id and the page
                             version (below); written when the page goes to disk
    4       4     page_no    the page's own number, so a page written to the wrong place is caught
    8       2     kind       HEAP, BTREE_LEAF, BTREE_INNER, ... (what the rest of the page means)
    10      2     count      records (or keys) in use on the page
    12      4     link       kind-specific: next leaf for a B+ tree leaf, unused for heap pages

Which file, which version. A checksum alone accepts any intact page, so two silent failures
would read back as good data: a *misdirected* write (a page of file A landing in file B) and a
*lost* write (the disk acknowledged a write it never made, so an older copy of the page is still
there). Every page therefore carries its file's id (a random 32-bit number the catalog keeps for
the file) and its *version* (how many times that page has been written; the catalog keeps the
version of every page, see ``minidb.storage.disk``). They are carried *inside the checksum*
rather than in header fields of their own: the checksum is ``crc32(id, version)`` continued
from the CRC-32 of the page's bytes, so a page verifies only in the file and at the version the
reader expects. Storing them in the header would have cost 8 more bytes of every page, which
changes how many tuples (and B+ tree keys) a page holds, and so the page counts every measured
experiment is calibrated on. When a page fails, ``verify`` works out what it is by trying the
other candidates (the page number in its header, the other files of the disk, other versions
of the page): a page of another file, an older version (a lost write), a newer one (a change cut
off before its catalog was written), or plain damage.

A heap page follows the header with a slot bitmap (one bit per slot, 1 = live record) and then
the fixed-width records. Slot s of page p is record id ``p * capacity + s``; deleting a record
clears its bit, so the ids of the other records never move (non-clustered indexes rely on that).
The capacity is the largest c with ``16 + ceil(c / 8) + c * width <= page_size``: a 4 KB page holds
19 Wisconsin tuples of 208 bytes.

Everything here works on *arrays of pages* (shape ``(n, page_size)``, dtype uint8) so a cluster of
pages is packed, checked or unpacked with a handful of numpy calls, never a Python loop per tuple.

Checking a cluster. The CRC of each page body is one call to a C function (``crc32``, below), in
one ``map`` over the cluster's pages: the bytes are the cost, about 2 GB/s with zlib's CRC-32
and 2-3x that with ISA-L's (the ``isal`` package, a dependency on machines it has wheels for:
the same CRC-32, so the same stored checksums, computed with the processor's carry-less
multiply). Folding the file id and the version into each page's CRC needs no further call per
page: continuing a CRC over 8 more bytes is an affine map of the CRC it starts from (see
``fold_many``), so the folded checksums of a whole cluster are four table look-ups and a few XORs
in numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from minidb.errors import CorruptPageError, PageSizeError, SchemaError
from minidb.storage.schema import NULLS

try:  # ISA-L's CRC-32: the same checksum as zlib's, 2-3x faster (the isal package)
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - depends on what is installed
    from zlib import crc32

HEADER_SIZE = 16
MIN_PAGE_SIZE = 2 * 1024
MAX_PAGE_SIZE = 32 * 1024

# page kinds
FREE = 0
HEAP = 1
BTREE_LEAF = 2
BTREE_INNER = 3
HASH_BUCKET = 4
META = 5

HEADER_DTYPE = np.dtype(
    [("checksum", "<u4"), ("page_no", "<u4"), ("kind", "<u2"), ("count", "<u2"), ("link", "<i4")]
)
assert HEADER_DTYPE.itemsize == HEADER_SIZE


class Predicate(Protocol):
    """What ``HeapPageFormat.unpack`` needs of a filter: the columns it reads and a mask."""

    def columns(self) -> set[str]: ...

    def evaluate(self, batch) -> np.ndarray: ...


class _Columns(dict):
    """A few columns of a batch, by name; ``len`` is the number of tuples (as for a batch)."""

    def __init__(self, columns: dict[str, np.ndarray], rows: int):
        super().__init__(columns)
        self.rows = rows

    def __len__(self) -> int:
        return self.rows

    def select_rows(self, mask: np.ndarray) -> _Columns:
        """The same columns for the tuples where ``mask`` is true (as ``batch[mask]`` would)."""
        return _Columns({name: values[mask] for name, values in self.items()}, int(mask.sum()))


def check_page_size(page_size: int) -> int:
    """Validate a page size: 2 KB to 32 KB, a multiple of 512 bytes."""
    if not isinstance(page_size, int | np.integer) or not (MIN_PAGE_SIZE <= page_size <= MAX_PAGE_SIZE):
        raise PageSizeError(
            f"page size {page_size!r} is out of range; use {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE} bytes"
        )
    if page_size % 512:
        raise PageSizeError(f"page size {page_size} is not a multiple of 512 bytes")
    return int(page_size)


def headers(pages: np.ndarray) -> np.ndarray:
    """View the headers of an ``(n, page_size)`` page array as a structured array of n headers."""
    return pages[:, :HEADER_SIZE].copy().view(HEADER_DTYPE).reshape(-1)


def set_headers(pages: np.ndarray, page_nos: np.ndarray, kind: int, counts: np.ndarray, link=-1) -> None:
    """Write the header fields (all but the checksum) of every page in ``pages``."""
    h = np.zeros(len(pages), dtype=HEADER_DTYPE)
    h["page_no"] = page_nos
    h["kind"] = kind
    h["count"] = counts
    h["link"] = link
    pages[:, :HEADER_SIZE] = h.view(np.uint8).reshape(len(pages), HEADER_SIZE)


#: versions past the expected one that ``verify`` tries when it explains a failed page (a change
#: cut off by a crash may have written a page several times before its catalog was saved)
NEWER_VERSIONS_TRIED = 4096

#: what ``verify`` needs to know about the other files of a disk: (name, file id, page versions)
OtherFiles = Callable[[], Iterable[tuple[str, int, "np.ndarray"]]]


def body_checksums(pages: np.ndarray) -> np.ndarray:
    """CRC-32 of bytes 4..page_size of every page (everything the checksum field protects)."""
    return np.fromiter(map(crc32, _bodies(np.ascontiguousarray(pages))), dtype="<u4",
                       count=len(pages))


#: the page bodies of the last page array checksummed: (address and shape, memoryviews)
_last_bodies: tuple[tuple[int, ...], list[memoryview]] | None = None
#: larger arrays (a bulk load's pages) are not kept alive by that entry
_KEEP_BODIES_BYTES = 4 * 1024 * 1024


def _bodies(pages: np.ndarray) -> list[memoryview]:
    """Bytes 4..page_size of every page, one memoryview each. The list for the last array seen
    is kept, so a scan that reads every cluster into the same buffer slices it once, and
    ``map(crc32, ...)`` then runs without a Python step per page. (A cached view keeps its memory
    alive, so another array cannot be given the same address while the entry stands; arrays
    over ``_KEEP_BODIES_BYTES`` are not kept.)"""
    global _last_bodies
    key = (pages.ctypes.data, *pages.shape)
    cached = _last_bodies
    if cached is None or cached[0] != key:
        flat, size = memoryview(pages.reshape(-1)), pages.shape[1]
        cached = (key, [flat[start + 4 : start + size] for start in range(0, len(flat), size)])
        if pages.nbytes <= _KEEP_BODIES_BYTES:
            _last_bodies = cached
    return cached[1]


def fold(body_crc: int, file_id: int, version: int) -> int:
    """The stored checksum: the body's CRC continued over the file id and the page version."""
    return crc32(struct.pack("<II", file_id & 0xFFFFFFFF, version & 0xFFFFFFFF), body_crc)


def _continue_tables() -> np.ndarray:
    """``T[k, x]``: what byte k of a starting CRC equal to x contributes to a CRC continued over
    8 bytes. ``crc32(d, c) = A(c) XOR crc32(d, 0)`` for any 8 bytes d, with A linear over the
    bits of c and the same for every d (CRC arithmetic is linear; zlib's pre- and
    post-inversion cancel), so A(c) is the XOR of ``T[k, byte k of c]`` over the four bytes."""
    zero8 = bytes(8)
    base = crc32(zero8, 0)
    return np.array([[crc32(zero8, x << (8 * k)) ^ base for x in range(256)] for k in range(4)],
                    dtype="<u4")


_CONTINUE = _continue_tables()
#: the same by 16-bit halves of the starting CRC (two look-ups a page instead of four; 256 KB each)
_CONTINUE_LOW = (_CONTINUE[1][:, None] ^ _CONTINUE[0][None, :]).reshape(-1)
_CONTINUE_HIGH = (_CONTINUE[3][:, None] ^ _CONTINUE[2][None, :]).reshape(-1)


def fold_many(bodies: np.ndarray, file_id: int, versions: np.ndarray | None) -> np.ndarray:
    """``fold`` of every page at once: the stored checksums pages with these body CRCs must have
    (``versions`` one a page, None: all 0). One ``crc32`` call per distinct version (a loaded
    file has one), the rest table look-ups (``_continue_tables``)."""
    b = np.asarray(bodies, dtype="<u4")
    moved = _CONTINUE_LOW.take(b & 0xFFFF) ^ _CONTINUE_HIGH.take(b >> 16)
    file_id &= 0xFFFFFFFF
    versions = np.zeros(1, dtype=np.uint32) if versions is None else np.asarray(versions, dtype=np.uint32)
    if len(versions) and (versions == versions[0]).all():  # the common case: one version
        return moved ^ np.uint32(crc32(struct.pack("<II", file_id, int(versions[0]))))
    distinct, which = np.unique(versions, return_inverse=True)
    tails = np.array([crc32(struct.pack("<II", file_id, int(v))) for v in distinct], dtype="<u4")
    return moved ^ tails[which.reshape(-1)]


def seal(pages: np.ndarray, file_id: int = 0, versions: np.ndarray | None = None) -> None:
    """Compute and store the checksum of every page (done just before pages go to disk), for the
    file ``file_id`` with page ``i`` at version ``versions[i]`` (0 for all when None)."""
    sums = fold_many(body_checksums(pages), file_id, versions)
    pages[:, :4] = sums.view(np.uint8).reshape(-1, 4)


def verify(pages: np.ndarray, first_page_no: int, file_name: str, file_id: int = 0,
           versions: np.ndarray | None = None, others: OtherFiles | None = None) -> None:
    """Check pages read from disk: checksums (for this file id and the page versions expected)
    and page numbers. ``versions`` are the expected versions of *every* page of the file (None:
    all 0); ``others`` lists the disk's other files, to name the one a stray page belongs to.
    Raises ``CorruptPageError`` naming the first bad page and what is wrong with it."""
    if not len(pages):
        return
    expected = None if versions is None else versions[first_page_no : first_page_no + len(pages)]
    bodies = body_checksums(pages)
    head = pages[:, :8].copy().view("<u4")  # (n, 2): the stored checksum and the page number
    stored, page_nos = head[:, 0], head[:, 1]
    bad = np.flatnonzero(fold_many(bodies, file_id, expected) != stored)
    if len(bad):
        i = int(bad[0])
        what = _explain(int(bodies[i]), int(stored[i]), first_page_no + i, int(page_nos[i]),
                        file_id, versions, others)
        raise CorruptPageError(f"page {first_page_no + i} of {file_name} {what}")
    numbers = np.arange(first_page_no, first_page_no + len(pages), dtype="<u4")
    wrong = np.flatnonzero(page_nos != numbers)
    if len(wrong):
        i = int(wrong[0])
        raise CorruptPageError(
            f"page {first_page_no + i} of {file_name} holds page {int(page_nos[i])} "
            "(misplaced write); reload the table"
        )


def _explain(body: int, stored: int, page_no: int, header_page_no: int, file_id: int,
             versions: np.ndarray | None, others: OtherFiles | None) -> str:
    """What a page that failed its checksum is, found by trying the other candidates."""
    def version_of(n: int) -> int:
        return 0 if versions is None or n >= len(versions) else int(versions[n])

    if header_page_no != page_no and fold(body, file_id, version_of(header_page_no)) == stored:
        return f"holds page {header_page_no} (misplaced write); reload the table"
    for name, other_id, other_versions in (others() if others is not None else ()):
        top = int(other_versions.max()) if len(other_versions) else 0
        if _matching_version(body, stored, other_id, top) is not None:
            return (f"holds page {header_page_no} of {name} (a write meant for another file "
                    "landed here); reload the table")
    want = version_of(page_no)
    found = _matching_version(body, stored, file_id, want)
    if header_page_no == page_no and found is not None and found < want:
        return (f"is an old copy of the page (version {found}, the catalog recorded version "
                f"{want}): a write was lost; reload the table")
    if header_page_no == page_no and found is not None and found > want:
        return (f"is newer than the catalog (version {found}, the catalog recorded version "
                f"{want}): a change was cut off before the catalog was written; reload the table")
    return "is corrupt (checksum mismatch); the file was damaged on disk: reload the table"


def _matching_version(body: int, stored: int, file_id: int, around: int) -> int | None:
    """The version v in 0 .. around + NEWER_VERSIONS_TRIED with fold(body, file_id, v) == stored."""
    for v in range(around + NEWER_VERSIONS_TRIED + 1):
        if fold(body, file_id, v) == stored:
            return v
    return None


@dataclass(frozen=True)
class HeapPageFormat:
    """Where the bitmap and the records sit on a heap page, for one record width."""

    page_size: int
    record_dtype: np.dtype

    @property
    def width(self) -> int:
        return self.record_dtype.itemsize

    @cached_property
    def capacity(self) -> int:
        """Records per page: the largest c with 16 + ceil(c/8) + c*width <= page_size."""
        return heap_capacity(self.page_size, self.width)

    @cached_property
    def bitmap_bytes(self) -> int:
        return (self.capacity + 7) // 8

    @cached_property
    def records_offset(self) -> int:
        return HEADER_SIZE + self.bitmap_bytes

    @cached_property
    def raw_dtype(self) -> np.dtype:
        """A record as ``width`` opaque bytes: gathering records of this type copies each with
        one memcpy, where the structured type copies them field by field (several times slower)."""
        return np.dtype((np.void, self.width))

    # -- vectorized packing / unpacking -------------------------------------------------------
    def pack(self, records: np.ndarray, first_page_no: int) -> np.ndarray:
        """Lay ``records`` out on as many fresh, full pages as needed (the last may be partial)."""
        cap = self.capacity
        n = len(records)
        npages = max(1, -(-n // cap))
        pages = np.zeros((npages, self.page_size), dtype=np.uint8)
        counts = np.full(npages, cap, dtype=np.uint16)
        counts[-1] = n - cap * (npages - 1)
        set_headers(pages, np.arange(first_page_no, first_page_no + npages), HEAP, counts)
        live = np.zeros(npages * cap, dtype=bool)
        live[:n] = True
        pages[:, HEADER_SIZE : self.records_offset] = np.packbits(
            live.reshape(npages, cap), axis=1, bitorder="little"
        )
        end = self.records_offset + cap * self.width
        full = n // cap  # full pages take the records' bytes as they are, without a copy first
        if full:
            flat = np.ascontiguousarray(records[: full * cap], dtype=self.record_dtype)
            pages[:full, self.records_offset : end] = flat.view(np.uint8).reshape(full, cap * self.width)
        if full < npages:
            body = np.zeros(cap, dtype=self.record_dtype)
            body[: n - full * cap] = records[full * cap :]
            pages[full, self.records_offset : end] = body.view(np.uint8)
        return pages

    def live_mask(self, pages: np.ndarray) -> np.ndarray:
        """Boolean ``(n, capacity)`` array: which slots of each page hold a live record."""
        bits = np.unpackbits(pages[:, HEADER_SIZE : self.records_offset], axis=1, bitorder="little")
        return bits[:, : self.capacity].astype(bool)

    def slots(self, pages: np.ndarray) -> np.ndarray:
        """All slots of the pages as a ``(n, capacity)`` structured array (live or not), a copy."""
        end = self.records_offset + self.capacity * self.width
        body = np.ascontiguousarray(pages[:, self.records_offset : end])
        return body.view(self.record_dtype).reshape(len(pages), self.capacity)

    def slot_view(self, page: np.ndarray) -> np.ndarray:
        """Writable view of one page's slots (``page`` is a 1-D uint8 array of one page)."""
        end = self.records_offset + self.capacity * self.width
        return page[self.records_offset : end].view(self.record_dtype)

    def unpack(self, pages: np.ndarray, first_page_no: int, where: Predicate | None = None,
               columns: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Live records of consecutive pages and their record ids, in page / slot order.

        ``where`` (an ``Expr``, anything with ``columns()`` and ``evaluate(batch)``) is applied
        before the records are copied out of the pages: only the columns it reads are gathered to
        evaluate it, and only qualifying records are copied, so a 1% selection copies 1% of the
        bytes it scans. ``columns`` keeps only those fields (a projection), so an aggregate over
        two integer columns copies 8 bytes a tuple instead of 208.
        """
        cap = self.capacity
        body = pages[:, self.records_offset : self.records_offset + cap * self.width]
        slots = body.view(self.record_dtype)  # (n, cap) records, no copy: one column at a time
        whole = body.view(self.raw_dtype)  # the same slots as opaque bytes: whole records
        wanted = self.live_mask(pages)  # a boolean mask gathers in page / slot order
        if where is not None:
            wanted = self._qualifying(slots, whole, wanted, where)
        chosen = np.flatnonzero(wanted)
        if columns is None or NULLS in self.record_dtype.names:
            records = whole[wanted].view(self.record_dtype)  # whole records: the bitmap is per record
        else:
            records = np.empty(len(chosen), dtype=[(c, self.record_dtype[c]) for c in columns])
            for c in columns:
                records[c] = slots[c][wanted]  # one strided pass per column
        return records, chosen + first_page_no * cap

    def _qualifying(self, slots: np.ndarray, whole: np.ndarray, live: np.ndarray,
                    where: Predicate) -> np.ndarray:
        """The slots of ``live`` whose tuple satisfies ``where`` (TRUE, not NULL), evaluated on
        the stored tuples only: the zeros of a free slot must not fail a CAST or an ABS."""
        if NULLS in self.record_dtype.names:  # the predicate needs the null bitmap too
            inputs = whole[live].view(self.record_dtype)
        else:
            inputs = _Columns({c: slots[c][live] for c in where.columns()}, int(np.count_nonzero(live)))
        mask = np.asarray(where.evaluate(inputs))
        if mask.dtype != np.bool_:
            raise SchemaError(f"the condition {where} is not true/false valued")
        if hasattr(where, "null_mask") and (unknown := where.null_mask(inputs)) is not None:
            mask = mask & ~unknown  # a predicate that is NULL (unknown) does not qualify a tuple
        qualifying = np.zeros_like(live)
        qualifying[live] = mask
        return qualifying

    def set_live(self, page: np.ndarray, slots: np.ndarray, value: bool) -> None:
        """Set or clear the live bit of ``slots`` on one page and keep its count in step."""
        mask = np.unpackbits(page[HEADER_SIZE : self.records_offset], bitorder="little")[: self.capacity].astype(bool)
        mask[slots] = value
        page[HEADER_SIZE : self.records_offset] = np.packbits(mask, bitorder="little")
        page[10:12] = np.array([mask.sum()], dtype="<u2").view(np.uint8)

    def free_slots(self, page: np.ndarray) -> np.ndarray:
        mask = np.unpackbits(page[HEADER_SIZE : self.records_offset], bitorder="little")[: self.capacity]
        return np.flatnonzero(mask == 0)


def heap_capacity(page_size: int, width: int) -> int:
    """How many records of ``width`` bytes fit on a heap page of ``page_size`` bytes."""
    usable_bits = (page_size - HEADER_SIZE) * 8
    cap = usable_bits // (width * 8 + 1)
    while cap > 0 and HEADER_SIZE + (cap + 7) // 8 + cap * width > page_size:
        cap -= 1
    if cap < 1:
        raise PageSizeError(
            f"a {page_size}-byte page cannot hold one {width}-byte record; "
            f"use a page size of at least {HEADER_SIZE + 1 + width} bytes (rounded up to 2048..32768)"
        )
    return int(cap)
