"""Tests of minidb.storage.page: heap page capacity, packing, record ids, live bits, checksums."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minidb.errors import CorruptPageError, PageSizeError
from minidb.storage import page as pg
from minidb.storage.page import HeapPageFormat, check_page_size, heap_capacity

# a Wisconsin tuple: thirteen 4-byte integers and three 52-byte strings, 208 bytes
WISCONSIN = np.dtype([(f"i{k}", "<i4") for k in range(13)] + [(f"s{k}", "S52") for k in range(3)])
PAIR = np.dtype([("a", "<i4"), ("b", "<i8")])
WIDE = np.dtype([("k", "<i8"), ("pad", "S1000")])
DTYPES = [WISCONSIN, PAIR, WIDE]


def random_records(dtype: np.dtype, n: int, seed: int) -> np.ndarray:
    """``n`` records of ``dtype`` with random bytes (every field gets arbitrary content)."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).copy()


# -- capacity -------------------------------------------------------------------------------
def test_wisconsin_capacity_at_4k_and_32k():
    assert WISCONSIN.itemsize == 208
    assert heap_capacity(4096, 208) == 19
    assert HeapPageFormat(4096, WISCONSIN).capacity == 19
    assert HeapPageFormat(32768, WISCONSIN).capacity == 157


@pytest.mark.parametrize("page_size", [2048, 2560, 4096, 8192, 16384, 32768])
@pytest.mark.parametrize("width", [1, 8, 12, 208, 1000])
def test_capacity_is_the_largest_that_fits(page_size, width):
    cap = heap_capacity(page_size, width)

    def size(c):
        return pg.HEADER_SIZE + (c + 7) // 8 + c * width

    assert size(cap) <= page_size < size(cap + 1)


def test_page_too_small_for_one_record():
    with pytest.raises(PageSizeError, match="cannot hold one 3000-byte record"):
        heap_capacity(2048, 3000)
    with pytest.raises(PageSizeError):
        HeapPageFormat(2048, np.dtype("S4000")).capacity  # noqa: B018


@pytest.mark.parametrize("bad", [0, 1024, 2047, 4000, 32768 + 512, 65536, -4096, 4096.0, "4096"])
def test_out_of_range_page_sizes(bad):
    with pytest.raises(PageSizeError):
        check_page_size(bad)


@pytest.mark.parametrize("good", [2048, 2560, 4096, 32768, np.int64(8192)])
def test_valid_page_sizes(good):
    assert check_page_size(good) == int(good)


# -- pack / unpack --------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 400),
    dtype_index=st.integers(0, len(DTYPES) - 1),
    page_size=st.sampled_from([2048, 4096, 8192]),
    first=st.integers(0, 1000),
    seed=st.integers(0, 2**32 - 1),
)
def test_pack_unpack_round_trip(n, dtype_index, page_size, first, seed):
    dtype = DTYPES[dtype_index]
    fmt = HeapPageFormat(page_size, dtype)
    records = random_records(dtype, n, seed)
    pages = fmt.pack(records, first)
    cap = fmt.capacity
    assert pages.shape == (max(1, -(-n // cap)), page_size)
    h = pg.headers(pages)
    assert list(h["page_no"]) == list(range(first, first + len(pages)))
    assert set(h["kind"]) == {pg.HEAP}
    assert h["count"].sum() == n
    assert (h["count"][:-1] == cap).all()
    out, rids = fmt.unpack(pages, first)
    assert out.dtype == dtype
    assert out.tobytes() == records.tobytes()
    # record id = page * capacity + slot; packed records are dense from slot 0 of page `first`
    np.testing.assert_array_equal(rids, first * cap + np.arange(n))
    # a sealed page verifies; the same page checked as if it lived elsewhere does not
    pg.seal(pages)
    pg.verify(pages, first, "t")
    with pytest.raises(CorruptPageError, match="misplaced"):
        pg.verify(pages, first + 1, "t")


def test_record_ids_are_page_times_capacity_plus_slot():
    fmt = HeapPageFormat(4096, WISCONSIN)
    records = random_records(WISCONSIN, 50, 1)
    pages = fmt.pack(records, 7)
    _, rids = fmt.unpack(pages, 7)
    assert rids[0] == 7 * 19
    assert rids[19] == 8 * 19  # first slot of the second page
    assert rids[-1] == 9 * 19 + (50 - 2 * 19 - 1)
    np.testing.assert_array_equal(rids // 19 - 7, np.arange(50) // 19)


# -- live bits -----------------------------------------------------------------------------
def test_live_bits_delete_and_restore():
    fmt = HeapPageFormat(4096, WISCONSIN)
    records = random_records(WISCONSIN, 19 + 10, 2)
    pages = fmt.pack(records, 0)
    assert fmt.live_mask(pages).sum() == 29
    assert list(fmt.free_slots(pages[1])) == list(range(10, 19))

    fmt.set_live(pages[0], np.array([0, 5, 18]), False)
    assert pg.headers(pages)["count"][0] == 16
    assert list(fmt.free_slots(pages[0])) == [0, 5, 18]
    out, rids = fmt.unpack(pages, 0)
    assert len(out) == 26
    assert not {0, 5, 18} & set(rids.tolist())
    keep = np.ones(29, dtype=bool)
    keep[[0, 5, 18]] = False
    assert out.tobytes() == records[keep].tobytes()

    fmt.set_live(pages[0], np.array([5]), True)  # the record bytes are still there
    assert pg.headers(pages)["count"][0] == 17
    out, rids = fmt.unpack(pages, 0)
    assert 5 in rids
    assert out[rids.tolist().index(5)].tobytes() == records[5].tobytes()


def test_bitmap_bits_past_capacity_stay_clear():
    # 19 slots use 3 bitmap bytes; the 5 spare bits must never read as live records
    fmt = HeapPageFormat(4096, WISCONSIN)
    pages = fmt.pack(random_records(WISCONSIN, 19, 3), 0)
    assert fmt.bitmap_bytes == 3
    bits = np.unpackbits(pages[0, pg.HEADER_SIZE : fmt.records_offset], bitorder="little")
    assert bits[:19].all() and not bits[19:].any()
    fmt.set_live(pages[0], np.arange(19), False)
    assert not pages[0, pg.HEADER_SIZE : fmt.records_offset].any()
    assert fmt.live_mask(pages).shape == (1, 19)


def test_checksum_catches_a_flipped_byte():
    fmt = HeapPageFormat(2048, PAIR)
    pages = fmt.pack(random_records(PAIR, 300, 4), 3)
    pg.seal(pages)
    pages[1, 700] ^= 0x01
    with pytest.raises(CorruptPageError, match=r"page 4 of emp is corrupt"):
        pg.verify(pages, 3, "emp")


def test_the_checksum_is_zlibs_crc32_folded_with_file_id_and_version():
    """Whichever CRC-32 implementation is installed (zlib, or ISA-L's), a sealed page stores
    zlib's CRC-32 of its body continued over (file id, version): the on-disk format."""
    import struct
    import zlib

    fmt = HeapPageFormat(4096, WISCONSIN)
    pages = fmt.pack(random_records(WISCONSIN, 60, 5), 0)
    versions = np.array([1, 7, 7, 2**32 - 1], dtype=np.uint32)
    pg.seal(pages, 0xDEADBEEF, versions)
    for page, v in zip(pages, versions.tolist(), strict=True):
        body = zlib.crc32(page[4:].tobytes())
        want = zlib.crc32(struct.pack("<II", 0xDEADBEEF, v), body)
        assert int(page[:4].view("<u4")[0]) == want == pg.fold(body, 0xDEADBEEF, v)
    pg.verify(pages, 0, "t", 0xDEADBEEF, versions)


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=40),
       st.integers(0, 2**32 - 1), st.integers(0, 3))
@settings(max_examples=60, deadline=None)
def test_fold_many_is_fold_of_each_page(bodies, file_id, spread):
    """The table-driven fold of a cluster equals the one-CRC-call-per-page fold."""
    bodies = np.array(bodies, dtype=np.uint32)
    versions = (np.arange(len(bodies)) * spread % 5).astype(np.uint32)
    want = [pg.fold(b, file_id, v) for b, v in zip(bodies.tolist(), versions.tolist(), strict=True)]
    assert pg.fold_many(bodies, file_id, versions).tolist() == want
    assert pg.fold_many(bodies, file_id, None).tolist() == [pg.fold(b, file_id, 0) for b in bodies.tolist()]


def test_checksums_follow_a_reused_buffer():
    """The page bodies of the last array are sliced once and reused (a scan reads every cluster
    into one buffer): the checksums are still those of the bytes in it now."""
    fmt = HeapPageFormat(4096, WISCONSIN)
    buffer = fmt.pack(random_records(WISCONSIN, 19 * 8, 6), 0)
    first = pg.body_checksums(buffer[:8])
    buffer[3, 2000] ^= 0xFF
    second = pg.body_checksums(buffer[:8])
    assert (first != second).tolist() == [i == 3 for i in range(8)]
    assert pg.body_checksums(buffer[:5]).tolist() == second[:5].tolist()
