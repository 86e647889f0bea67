"""`take_records` gathers records as raw bytes; it must equal numpy's own `batch[which]`.

The exchange's split, the filter, the hash join and the index builders all use it, so a
difference would move, drop or corrupt tuples silently. Compared byte for byte on random
layouts (integers, floats, text, a NULL bitmap), random index arrays and masks, sliced (not
contiguous) inputs and empty ones.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from minidb.storage.schema import Schema, char_column, float_column, int_column, take_records

_KINDS = [lambda i: int_column(f"i{i}"), lambda i: int_column(f"l{i}", "int64"),
          lambda i: float_column(f"f{i}"), lambda i: char_column(f"s{i}", 7)]


@st.composite
def batches(draw):
    kinds = draw(st.lists(st.integers(0, len(_KINDS) - 1), min_size=1, max_size=5))
    columns = [_KINDS[k](i) for i, k in enumerate(kinds)]
    if draw(st.booleans()):
        columns = [c.with_nullable(True) for c in columns]
    schema = Schema(columns)
    n = draw(st.integers(0, 60))
    raw = np.frombuffer(draw(st.binary(min_size=n * schema.dtype.itemsize,
                                       max_size=n * schema.dtype.itemsize)), dtype=np.uint8)
    records = raw.copy().view(schema.dtype)
    step = draw(st.sampled_from([1, 1, 2, 3]))  # a strided slice is not contiguous
    return records[::step]


@settings(max_examples=150, deadline=None)
@given(batch=batches(), data=st.data())
def test_equals_numpy_fancy_indexing(batch, data):
    n = len(batch)
    index = np.array(data.draw(st.lists(st.integers(0, max(0, n - 1)), max_size=80) if n
                               else st.just([])), dtype=np.int64)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    for which in (index, mask):
        got, want = take_records(batch, which), batch[which]
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def test_plain_arrays_are_indexed_as_usual():
    values = np.arange(10)
    assert take_records(values, np.array([3, 1])).tolist() == [3, 1]
    assert take_records(values, values > 7).tolist() == [8, 9]
