"""LH*'s arithmetic (minidb.sdds.addressing) against the rules of docs/facts.md, by hand and
exhaustively: every stale image, every key, at most two forwards, and IAMs never overshoot."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from minidb.hashing import hash_keys
from minidb.sdds import addressing as A
from minidb.sdds.servers import pseudokey


def states(n0: int, splits: int) -> list[A.FileState]:
    """The file states an LH* file with ``n0`` first buckets passes through in ``splits`` splits."""
    s = A.FileState(0, 0, n0)
    out = [s]
    for _ in range(splits):
        s = s.after_split()
        out.append(s)
    return out


def route(state: A.FileState, image: A.Image, c: int) -> tuple[int, int, int]:
    """(first address, final address, forwards) of key ``c`` sent with ``image``."""
    first = a = A.client_address(image, c, state.n0)
    forwards = 0
    while (nxt := A.server_address(a, state.bucket_level(a), c, state.n0)) != a:
        a, forwards = nxt, forwards + 1
    return first, a, forwards


def test_file_state_by_hand_with_one_first_bucket():
    s = [(x.level, x.split, x.buckets) for x in states(1, 7)]
    assert s == [(0, 0, 1), (1, 0, 2), (1, 1, 3), (2, 0, 4), (2, 1, 5), (2, 2, 6), (2, 3, 7),
                 (3, 0, 8)]
    five = A.FileState(2, 1, 1)  # bucket 0 split into 0 and 4 this round
    assert [five.bucket_level(m) for m in range(5)] == [3, 2, 2, 2, 3]
    assert [five.address(c) for c in (0, 4, 8, 12, 5, 6, 7)] == [0, 4, 0, 4, 1, 2, 3]
    with pytest.raises(ValueError, match="does not exist"):
        five.bucket_level(5)


def test_file_state_with_three_first_buckets_and_merges_undo_splits():
    s = states(3, 10)
    assert [x.buckets for x in s] == list(range(3, 14))
    assert s[3] == A.FileState(1, 0, 3)
    for before, after in zip(s, s[1:], strict=False):
        assert after.before_split() == before
        parent, sibling = after.last_split()
        assert sibling == after.buckets - 1
        assert parent == before.split
    with pytest.raises(ValueError, match="cannot shrink"):
        A.FileState(0, 0, 3).before_split()


def test_client_address_and_forwarding_by_hand():
    # a client that has never heard of a split sends everything to bucket 0
    assert A.client_address(A.Image(), 13, 1) == 0
    # the file is (2, 1) with five buckets; key 13: h_2 = 1, home is 1 (level 2)
    file = A.FileState(2, 1, 1)
    assert A.server_address(0, file.bucket_level(0), 13, 1) == 1  # h_3(13) = 5 > 4: use h_2
    assert route(file, A.Image(), 13) == (0, 1, 1)
    # key 12: h_3 = 4, so bucket 0 (level 3) forwards to bucket 4
    assert route(file, A.Image(), 12) == (0, 4, 1)
    # an image (1, 0) sends key 7 to h_1 = 1, whose level 2 forwards to h_2(7) = 3
    assert route(file, A.Image(1, 0), 7) == (1, 3, 1)


def test_image_adjustment_by_hand():
    # server 1 at level 2 tells a (0, 0) client that buckets 0 and 1 have split at level 1:
    # i' = 1, n' = 2, which completes round 1, so the image becomes (2, 0)
    assert A.adjust_image(A.Image(0, 0), 1, 2, 1) == A.Image(2, 0)
    assert A.adjust_image(A.Image(0, 0), 0, 3, 1) == A.Image(2, 1)
    # a server no deeper than the image teaches nothing
    assert A.adjust_image(A.Image(2, 1), 3, 2, 1) == A.Image(2, 1)


@pytest.mark.parametrize("n0", [1, 2, 3, 5])
def test_every_stale_image_reaches_home_in_at_most_two_forwards(n0):
    """The LH* theorem, exhaustively: every file state of up to 50 splits, every image the file
    has passed through, every key up to three times the buckets."""
    hops = collections.Counter()
    history = states(n0, 50)
    for k, state in enumerate(history):
        for past in history[: k + 1]:
            image = A.Image(past.level, past.split)
            for c in range(3 * state.buckets):
                first, final, forwards = route(state, image, c)
                assert final == state.address(c)
                assert forwards <= A.MAX_FORWARDS
                hops[forwards] += 1
                if forwards:
                    adjusted = A.adjust_image(image, first, state.bucket_level(first), n0)
                    # an IAM never moves the image past the file
                    assert (adjusted.level, adjusted.split) <= (state.level, state.split)
                    assert adjusted.level >= image.level
    assert hops[2] > 0, "the exhaustive sweep should meet the two-forward case"


def test_a_broken_forwarding_rule_is_caught():
    """Without the h_(j-1) step, a request is sent to a bucket that does not exist yet (or takes
    more hops): the check above would fail on it."""
    def broken(address, level, c, n0):
        return A.h(level, c, n0)

    state = A.FileState(1, 1, 1)  # buckets 0, 1, 2; bucket 0 and 2 at level 2
    # key 3 sent to bucket 1 (level 1): h_1(3) = 1 is home under both rules; key 7 from an
    # image (0, 0) reaches bucket 0 (level 2): h_2(7) = 3 does not exist, the right rule says 1
    assert A.server_address(0, 2, 7, 1) == 1
    assert broken(0, 2, 7, 1) == 3 and 3 >= state.buckets


def test_pseudokey_matches_the_column_hash():
    keys = [0, 1, -1, 2**40 + 7, -(2**63), 2**63 - 1, 123456789]
    column = hash_keys(np.array(keys, dtype=np.int64))
    assert [pseudokey(k) for k in keys] == [int(x) for x in column]
    assert pseudokey(42, hashed=False) == 42
    with pytest.raises(TypeError, match="integers"):
        pseudokey("42")
    with pytest.raises(ValueError, match=">= 0"):
        pseudokey(-1, hashed=False)
