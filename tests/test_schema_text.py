"""Text columns loaded from Arrow: each value's UTF-8 bytes, NUL-padded to the field's width.

`fixed_width_bytes` scatters all values in one numpy assignment (the loading path of every
table); these tests compare it with the obvious value-by-value conversion.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from minidb.storage.schema import fixed_width_bytes


def _one_by_one(values: list[bytes], width: int) -> list[bytes]:
    return [v.ljust(width, b"\x00") for v in values]


def _as_padded(array) -> list[bytes]:
    # numpy's S dtype strips trailing NULs when a value is read back: compare the raw bytes
    width = array.dtype.itemsize
    raw = array.tobytes()
    return [raw[i * width:(i + 1) * width] for i in range(len(array))]


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 12), data=st.data(), large=st.booleans())
def test_matches_value_by_value(width, data, large):
    text = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FFF), max_size=width)
    values = [v.encode() for v in data.draw(st.lists(text, min_size=1, max_size=40))
              if len(v.encode()) <= width] or [b""]
    array = pa.array(values, pa.large_binary() if large else pa.binary())
    start = data.draw(st.integers(0, len(values) - 1))  # a slice has an offset into the buffers
    sliced = array.slice(start)
    assert _as_padded(fixed_width_bytes(sliced, width)) == _one_by_one(values[start:], width)


def test_values_that_fill_their_field():
    values = [b"abc", b"xyz", b"\xc3\xa9a"]  # 'éa' is three bytes
    assert _as_padded(fixed_width_bytes(pa.array(values, pa.binary()), 3)) == values
    assert _as_padded(fixed_width_bytes(pa.array(values, pa.binary()).slice(1), 3)) == values[1:]
