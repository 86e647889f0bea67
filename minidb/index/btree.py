"""A disk-resident B+ tree over fixed-width keys, with int64 values (record ids or page numbers).

What it rebuilds. Gamma (DeWitt et al. 1988, Sections 5.1 and 5.2.2) offers B-tree indices in two
roles: a *non-clustered* index whose leaves hold one (key, record id) entry per tuple, and the
search structure of a *clustered* index (see ``clustered.py``). Section 5.2.2 makes the point that
a larger disk page raises the fan-out of the tree, so the same relation needs fewer levels; here
the fan-out is computed from the page size and the key width, never chosen freely:

    entries per page = (page_size - 16-byte header) // (key bytes + 8-byte value or child pointer)

(one fewer when the value array needs an 8-byte aligned start). With int32 keys a 2 KB page holds
169 entries and a 32 KB page 2729, so 1,000,000 keys need three levels at 2 KB and two at 32 KB.

Pages. Every page is an entry page (``_util.EntryLayout``): keys, then int64 values, after the
common header. A leaf (kind BTREE_LEAF) holds sorted (key, value) entries and its header ``link``
is the next leaf, so a range scan walks the leaf level left to right. An inner page (BTREE_INNER)
holds (key_i, child_i) pairs: child_i covers keys in [key_i, key_{i+1}], and key_0 is the page's
own lower fence (ignored when searching). Splitting a page of either kind cuts its entries into
pieces; each new piece's first key goes up into the parent, so the same code grows every level,
and a root split adds a level on top. Every page is read and changed only through the buffer
manager (fix / unfix; ``new_page`` for growth), so every page touch is counted; a bulk load writes
its pages straight to disk in one sequential transfer, like ``HeapFile.append``.

Duplicates. The index is non-unique: separators are keys only (the paper's fan-out), so a run of
equal keys may span several leaves. A search for key x descends to the *leftmost* leaf that can
hold x and walks right; an insert descends to the rightmost one. ``delete`` removes exact
(key, value) pairs, walking the run of x if it spans leaves.

Simplified on purpose:

* no merging or redistribution on delete: pages may become underfull or even empty and stay in
  the tree (as in many real systems, which leave space reclamation to a reorganization);
* no concurrency control, latching or logging (one operator at a time per node);
* the root page number, height and entry count live in the Python object (the catalog), not in
  a meta page on disk;
* within a leaf, work is vectorized with numpy (``searchsorted``, ``insert``); Python runs once
  per page visited, never once per key.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import MinidbError
from minidb.exec.expr import compare
from minidb.index._util import (
    VALUE_DTYPE,
    Bound,
    EntryLayout,
    as_keys,
    bounds_empty,
    coerce_bound,
    coerce_exact,
    get_count,
    get_kind,
    get_link,
    get_page_no,
    init_header,
    key_dtype_of,
    match_pairs,
    set_link,
)
from minidb.storage.disk import Disk, PagedFile
from minidb.storage.page import BTREE_INNER, BTREE_LEAF, set_headers


class BPlusTree:
    """A B+ tree of (key, int64 value) entries stored in one page file of a node's disk."""

    def __init__(self, disk: Disk, buffer: BufferManager, file: PagedFile, key_dtype,
                 root: int, height: int, num_entries: int):
        self.disk = disk
        self.buffer = buffer
        self.file = file
        self.key_dtype = key_dtype_of(key_dtype)
        self.layout = EntryLayout(disk.page_size, self.key_dtype)
        self.root = root
        self.height = height
        self.num_entries = num_entries

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def create(cls, disk: Disk, buffer: BufferManager, name: str, key_dtype) -> BPlusTree:
        """An empty tree: one empty leaf, which is the root."""
        file = disk.create(name)
        tree = cls(disk, buffer, file, key_dtype, root=0, height=1, num_entries=0)
        page_no, page = buffer.new_page(file)
        init_header(page, page_no, BTREE_LEAF)
        buffer.unfix(file, page_no, dirty=True)
        return tree

    @classmethod
    def bulk_load(cls, disk: Disk, buffer: BufferManager, name: str, keys: np.ndarray,
                  values: np.ndarray, fill: float = 1.0) -> BPlusTree:
        """Build a tree bottom-up from unsorted entries: sort once, pack every level, write once.

        ``fill`` is the fraction of each page used (leave room for later inserts with < 1). The
        leaves come first in the file, in key order, then each inner level, the root last.
        """
        keys = np.asarray(keys)
        if keys.dtype.kind == "U":
            keys = np.char.encode(keys, "utf-8")
        key_dtype = key_dtype_of(keys.dtype)
        keys = keys.astype(key_dtype, copy=False)
        values = np.asarray(values, dtype=VALUE_DTYPE)
        if len(keys) != len(values):
            raise MinidbError(f"bulk_load: {len(keys)} keys but {len(values)} values")
        if not 0 < fill <= 1:
            raise MinidbError(f"bulk_load: fill must be in (0, 1], not {fill}")
        if not len(keys):
            return cls.create(disk, buffer, name, key_dtype)
        file = disk.create(name)
        tree = cls(disk, buffer, file, key_dtype, root=0, height=1, num_entries=len(keys))
        order = np.argsort(keys, kind="stable")
        level_keys, level_values = keys[order], values[order]
        cap = tree.layout.capacity
        parts, next_no, kind, per = [], 0, BTREE_LEAF, max(1, int(cap * fill))
        while True:
            n = len(level_keys)
            npages = -(-n // per)
            page_of = (np.arange(n, dtype=np.int64) * npages) // n  # spread evenly
            counts = np.bincount(page_of, minlength=npages)
            starts = np.cumsum(counts) - counts
            slot_of = np.arange(n, dtype=np.int64) - starts[page_of]
            pages = tree.layout.pack(level_keys, level_values, page_of, slot_of, npages)
            page_nos = np.arange(next_no, next_no + npages)
            if kind == BTREE_LEAF:
                links = np.where(page_nos + 1 < next_no + npages, page_nos + 1, -1)
            else:
                links = -1
            set_headers(pages, page_nos, kind, counts, links)
            parts.append(pages)
            next_no += npages
            if npages == 1:
                break
            level_keys, level_values = level_keys[starts], page_nos.astype(VALUE_DTYPE)
            kind, per = BTREE_INNER, max(2, int(cap * fill))
            tree.height += 1
        all_pages = np.concatenate(parts) if len(parts) > 1 else parts[0]
        file.append_pages(all_pages)
        buffer.counters.writes += len(all_pages)
        tree.root = next_no - 1
        return tree

    # -- shape --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.file.name

    @property
    def fanout(self) -> int:
        """Most children an inner page can have."""
        return self.layout.capacity

    @property
    def leaf_capacity(self) -> int:
        """Most entries a leaf can hold."""
        return self.layout.capacity

    @property
    def num_pages(self) -> int:
        return self.file.num_pages

    def __repr__(self) -> str:
        return (f"BPlusTree({self.name!r}, key {self.key_dtype}, {self.num_entries} entries, "
                f"height {self.height}, fanout {self.fanout}, {self.num_pages} pages)")

    # -- page access --------------------------------------------------------------------------
    def _fix(self, page_no: int) -> np.ndarray:
        return self.buffer.fix(self.file, page_no)

    def _unfix(self, page_no: int, dirty: bool = False, hint: str | None = None) -> None:
        self.buffer.unfix(self.file, page_no, dirty=dirty, hint=hint)

    def _read(self, page_no: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Copies of a page's keys and values, and its link (one fix / unfix)."""
        page = self._fix(page_no)
        n = get_count(page)
        keys = self.layout.keys(page)[:n].copy()
        values = self.layout.values(page)[:n].copy()
        link = get_link(page)
        self._unfix(page_no)
        return keys, values, link

    def _descend(self, key, side: str) -> tuple[list[tuple[int, int]], int, object]:
        """Root-to-leaf descent: (path of (inner page, child index), leaf page, upper fence).

        ``side='left'`` reaches the leftmost leaf that can hold ``key``, ``'right'`` the rightmost;
        ``key=None`` reaches the leftmost leaf of the tree. The fence is the smallest separator
        above the leaf's range (None at the right edge).
        """
        page_no, path, fence = self.root, [], None
        for _ in range(self.height - 1):
            page = self._fix(page_no)
            n = get_count(page)
            keys = self.layout.keys(page)[:n]
            j = 0 if key is None else int(np.searchsorted(keys[1:], key, side))
            if j + 1 < n:
                fence = keys[j + 1]
            child = int(self.layout.values(page)[j])
            self._unfix(page_no)
            path.append((page_no, j))
            page_no = child
        return path, page_no, fence

    def _keys(self, keys) -> np.ndarray:
        return as_keys(keys, self.key_dtype)

    # -- growth -------------------------------------------------------------------------------
    def _store(self, path: list[tuple[int, int]], page_no: int, page: np.ndarray, keys: np.ndarray,
               values: np.ndarray, leaf: bool) -> None:
        """Write entries back to a fixed page, splitting it into pieces if they do not fit.

        Unfixes the page, also when the split fails (no free frame for a new page, a failed
        write-back): the page is then left as it was, so an error does not leave a frame pinned
        for good. New pieces go to new pages at the end of the file; their first keys and page
        numbers are inserted into the parent (the last element of ``path``).
        """
        cap = self.layout.capacity
        m = len(keys)
        if m <= cap:
            self.layout.write(page, keys, values)
            self._unfix(page_no, dirty=True)
            return
        pieces = max(2, -(-m // cap))
        bounds = (np.arange(pieces + 1) * m) // pieces
        kind = BTREE_LEAF if leaf else BTREE_INNER
        first_new = self.file.num_pages
        new_nos = list(range(first_new, first_new + pieces - 1))
        old_link = get_link(page) if leaf else -1
        try:
            for p, expected in zip(range(1, pieces), new_nos, strict=True):
                no, frame = self.buffer.new_page(self.file)
                if no != expected:
                    raise MinidbError(f"{self.name}: page allocation out of order ({no} != {expected})")
                link = (no + 1 if p < pieces - 1 else old_link) if leaf else -1
                init_header(frame, no, kind, link=link)
                self.layout.write(frame, keys[bounds[p] : bounds[p + 1]], values[bounds[p] : bounds[p + 1]])
                self._unfix(no, dirty=True)
        except BaseException:
            self._unfix(page_no)  # unchanged: the tree still reads as before the split
            raise
        self.layout.write(page, keys[: bounds[1]], values[: bounds[1]])
        if leaf:
            set_link(page, new_nos[0])
        self._unfix(page_no, dirty=True)
        self._insert_into_parent(path, keys[bounds[1:-1]], np.array(new_nos, dtype=VALUE_DTYPE))

    def _insert_into_parent(self, path: list[tuple[int, int]], seps: np.ndarray,
                            children: np.ndarray) -> None:
        if not path:  # the root split: a new root above it, with the old root as child 0
            no, frame = self.buffer.new_page(self.file)
            init_header(frame, no, BTREE_INNER)
            self.layout.write(frame, seps[:1], np.array([self.root], dtype=VALUE_DTYPE))
            self._unfix(no, dirty=True)
            self.root = no
            self.height += 1
            path = [(no, 0)]
        parent, j = path[-1]
        page = self._fix(parent)
        n = get_count(page)
        keys = _splice(self.layout.keys(page)[:n], j + 1, seps)
        values = _splice(self.layout.values(page)[:n], j + 1, children)
        self._store(path[:-1], parent, page, keys, values, leaf=False)

    # -- updates ------------------------------------------------------------------------------
    def insert(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Add entries (duplicates allowed). One descent per leaf touched, not per key."""
        keys = self._keys(keys)
        values = np.asarray(values, dtype=VALUE_DTYPE)
        if len(keys) != len(values):
            raise MinidbError(f"insert: {len(keys)} keys but {len(values)} values")
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        i, n = 0, len(keys)
        while i < n:
            path, leaf_no, fence = self._descend(keys[i], "right")
            j = n if fence is None else max(i + 1, int(np.searchsorted(keys, fence, "left")))
            page = self._fix(leaf_no)
            c = get_count(page)
            lk, lv = self.layout.keys(page)[:c], self.layout.values(page)[:c]
            merged_k = np.concatenate([lk, keys[i:j]])
            order = np.argsort(merged_k, kind="stable")  # new duplicates after the old ones
            merged_k = merged_k[order]
            merged_v = np.concatenate([lv, values[i:j]])[order]
            self._store(path, leaf_no, page, merged_k, merged_v, leaf=True)
            self.num_entries += j - i
            i = j

    def delete(self, keys: np.ndarray, values: np.ndarray) -> int:
        """Remove exact (key, value) pairs; return how many entries were removed.

        Pages are not merged: a leaf may become underfull or empty and stays linked in place.
        """
        keys = self._keys(keys)
        values = np.asarray(values, dtype=VALUE_DTYPE)
        if len(keys) != len(values):
            raise MinidbError(f"delete: {len(keys)} keys but {len(values)} values")
        order = np.lexsort((values, keys))
        keys, values = keys[order], values[order]
        pending = np.ones(len(keys), dtype=bool)
        done = 0  # every pair before this index is resolved (removed, or known to be absent)
        removed = 0

        def first_pending() -> int:
            nonlocal done
            done += int(np.argmax(pending[done:])) if pending[done:].any() else len(keys) - done
            return done

        while first_pending() < len(keys):
            target = keys[done]
            _, leaf_no, _ = self._descend(target, "left")
            while True:
                if leaf_no < 0:
                    pending[:] = False
                    break
                page = self._fix(leaf_no)
                c = get_count(page)
                link = get_link(page)
                dirty = False
                last = None
                if c:
                    lk, lv = self.layout.keys(page)[:c], self.layout.values(page)[:c]
                    last = lk[c - 1]
                    upto = int(np.searchsorted(keys, last, "right"))
                    cand = done + np.flatnonzero(pending[done:upto])
                    if len(cand):
                        rm, hit = match_pairs(lk, lv, keys[cand], values[cand])
                        if rm.any():
                            keep = ~rm
                            self.layout.write(page, lk[keep].copy(), lv[keep].copy())
                            removed += int(rm.sum())
                            dirty = True
                        pending[cand[hit]] = False
                    pending[done : int(np.searchsorted(keys, last, "left"))] = False
                self._unfix(leaf_no, dirty=dirty)
                if first_pending() >= len(keys):
                    break
                nxt = keys[done]
                # DuckDB's order (NaN the largest, NaN = NaN): with IEEE comparisons a NaN
                # key still pending after its leaf never moved on, and the delete never ended
                if last is None or compare("<=", nxt, last) or compare("<", last, target):
                    leaf_no = link  # the run of equal keys (or the target) may go on
                    continue
                break
        self.num_entries -= removed
        return removed

    # -- searches -----------------------------------------------------------------------------
    def lookup(self, key) -> np.ndarray:
        """The values of every entry with this key."""
        k = coerce_exact(self.key_dtype, key)
        if k is None:
            return np.empty(0, dtype=VALUE_DTYPE)
        parts = [v for _, v in self.search_range(k, k)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=VALUE_DTYPE)

    def search_range(self, low=None, high=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(keys, values) of the entries with low <= key <= high, a leaf at a time, in key order.

        One root-to-leaf descent to the first leaf, then the leaf links. No page stays fixed
        between batches; leaves after the first are unfixed with the 'toss' hint so that a long
        scan does not push the inner pages (and everything else) out of the pool.
        """
        lo = coerce_bound(self.key_dtype, low, True)
        hi = coerce_bound(self.key_dtype, high, False)
        if bounds_empty(lo, hi):
            return
        _, leaf_no, _ = self._descend(lo.value, "left")
        yield from self._walk(leaf_no, 0, lo, hi)

    def _walk(self, leaf_no: int, start: int, lo: Bound | None = None,
              hi: Bound | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Walk the leaf level from entry ``start`` of ``leaf_no``, within optional bounds."""
        lside = "right" if lo is not None and lo.exclusive else "left"
        first = True
        while leaf_no >= 0:
            page = self._fix(leaf_no)
            c = get_count(page)
            lk = self.layout.keys(page)[:c]
            a = start if first else 0
            if lo is not None and lo.value is not None:
                a = max(a, int(np.searchsorted(lk, lo.value, lside)))
            b, stop = c, False
            if hi is not None and hi.value is not None:
                b = int(np.searchsorted(lk, hi.value, "right"))
                stop = b < c
            out_k = lk[a:b].copy()
            out_v = self.layout.values(page)[a:b].copy()
            link = get_link(page)
            self._unfix(leaf_no, hint=None if first else "toss")
            first = False
            if len(out_k):
                yield out_k, out_v
            if stop:
                return
            leaf_no = link

    def _floor(self, key, strict: bool) -> tuple[int, int, bool]:
        """The last entry with key < ``key`` (strict) or <= ``key``: (leaf, index, found).

        Normally one descent; if the leaf reached holds no such entry (possible after deletes
        emptied leaves) it backtracks into left siblings. When there is no such entry at all the
        answer is (leftmost leaf, 0, False).
        """
        side = "left" if strict else "right"
        state = {"leftmost": self.root}

        def visit(page_no: int, level: int):
            keys, values, _ = self._read(page_no)
            if level == 0:
                state["leftmost"] = page_no
                i = int(np.searchsorted(keys, key, side)) - 1
                return (page_no, i) if i >= 0 else None
            j = int(np.searchsorted(keys[1:], key, side))
            for c in range(j, -1, -1):
                found = visit(int(values[c]), level - 1)
                if found is not None:
                    return found
            return None

        found = visit(self.root, self.height - 1)
        if found is None:
            return state["leftmost"], 0, False
        return found[0], found[1], True

    def _find_entry(self, key, value: int):
        """Locate the exact entry (key, value): (path, leaf, index, upper fence) or None."""

        def visit(page_no: int, level: int, path: list, fence):
            keys, values, _ = self._read(page_no)
            if level == 0:
                a = int(np.searchsorted(keys, key, "left"))
                b = int(np.searchsorted(keys, key, "right"))
                hit = np.flatnonzero(values[a:b] == value)
                return (path, page_no, a + int(hit[0]), fence) if len(hit) else None
            n = len(keys)
            j0 = int(np.searchsorted(keys[1:], key, "left"))
            j1 = int(np.searchsorted(keys[1:], key, "right"))
            for j in range(j0, j1 + 1):
                child_fence = keys[j + 1] if j + 1 < n else fence
                found = visit(int(values[j]), level - 1, path + [(page_no, j)], child_fence)
                if found is not None:
                    return found
            return None

        return visit(self.root, self.height - 1, [], None)

    def _insert_after(self, anchor_key, anchor_value: int, keys: np.ndarray,
                      values: np.ndarray) -> None:
        """Insert entries (sorted, each within [anchor_key, next entry's key]) right after the
        entry (anchor_key, anchor_value), whatever the order of equal keys. The clustered file
        uses it to keep its sparse entries in the order of its data pages."""
        keys = self._keys(keys)
        values = np.asarray(values, dtype=VALUE_DTYPE)
        found = self._find_entry(anchor_key, anchor_value)
        if found is None:
            raise MinidbError(f"{self.name}: no entry ({anchor_key!r}, {anchor_value}) to insert after")
        path, leaf_no, idx, fence = found
        page = self._fix(leaf_no)
        c = get_count(page)
        lk, lv = self.layout.keys(page)[:c], self.layout.values(page)[:c]
        upper = lk[idx + 1] if idx + 1 < c else fence
        if keys[0] < lk[idx] or (upper is not None and keys[-1] > upper):
            self._unfix(leaf_no)
            raise MinidbError(f"{self.name}: entries inserted after ({anchor_key!r}, {anchor_value}) "
                              "would break the key order")
        merged_k = _splice(lk, idx + 1, keys)
        merged_v = _splice(lv, idx + 1, values)
        self._store(path, leaf_no, page, merged_k, merged_v, leaf=True)
        self.num_entries += len(keys)

    # -- maintenance --------------------------------------------------------------------------
    def check(self) -> None:
        """Verify the invariants; raise AssertionError naming the first broken one.

        Keys sorted within every page and across the leaf chain, every key within the range its
        parent's separators allow, inner pages' lower fences equal to their separators, all
        leaves at the same depth, page kinds / numbers / counts consistent, every page reachable.
        """
        leaves: list[int] = []
        seen: set[int] = set()
        total = self._check(self.root, self.height - 1, None, None, None, leaves, seen)
        if total != self.num_entries:
            raise AssertionError(f"{self.name}: {total} entries in the leaves, {self.num_entries} counted")
        if len(seen) != self.num_pages:
            raise AssertionError(f"{self.name}: {len(seen)} pages reachable of {self.num_pages}")
        chain, prev_last = [], None
        leaf_no = leaves[0]
        while leaf_no >= 0:
            if len(chain) > len(leaves):
                raise AssertionError(f"{self.name}: the leaf chain has a cycle")
            chain.append(leaf_no)
            keys, _, link = self._read(leaf_no)
            if len(keys):
                if prev_last is not None and keys[0] < prev_last:
                    raise AssertionError(f"{self.name}: leaf {leaf_no} starts below its predecessor")
                prev_last = keys[-1]
            leaf_no = link
        if chain != leaves:
            raise AssertionError(f"{self.name}: the leaf chain does not visit the leaves in key order")

    def _check(self, page_no: int, level: int, lo, hi, key0, leaves: list[int], seen: set[int]) -> int:
        if page_no in seen or not 0 <= page_no < self.num_pages:
            raise AssertionError(f"{self.name}: page {page_no} reached twice or out of range")
        seen.add(page_no)
        page = self._fix(page_no)
        kind, count, stored_no = get_kind(page), get_count(page), get_page_no(page)
        self._unfix(page_no)
        keys, values, _ = self._read(page_no)
        where = f"{self.name}: page {page_no}"
        if stored_no != page_no:
            raise AssertionError(f"{where} says it is page {stored_no}")
        if kind != (BTREE_LEAF if level == 0 else BTREE_INNER):
            raise AssertionError(f"{where} has kind {kind} at level {level}")
        if count > self.layout.capacity:
            raise AssertionError(f"{where} holds {count} entries, more than {self.layout.capacity}")
        if level == 0:
            if np.any(keys[1:] < keys[:-1]):
                raise AssertionError(f"{where}: leaf keys out of order")
            if len(keys) and ((lo is not None and keys[0] < lo) or (hi is not None and keys[-1] > hi)):
                raise AssertionError(f"{where}: leaf keys outside [{lo!r}, {hi!r}]")
            leaves.append(page_no)
            return len(keys)
        if count < 1:
            raise AssertionError(f"{where}: empty inner page")
        seps = keys[1:]
        if np.any(seps[1:] < seps[:-1]):
            raise AssertionError(f"{where}: separators out of order")
        if len(seps) and ((lo is not None and seps[0] < lo) or (hi is not None and seps[-1] > hi)):
            raise AssertionError(f"{where}: separators outside [{lo!r}, {hi!r}]")
        if key0 is not None and keys[0] != key0:
            raise AssertionError(f"{where}: lower fence {keys[0]!r} differs from its separator {key0!r}")
        total = 0
        for i in range(count):
            child_lo = lo if i == 0 else keys[i]
            child_hi = keys[i + 1] if i + 1 < count else hi
            child_key0 = (key0 if i == 0 else keys[i]) if level > 1 else None
            total += self._check(int(values[i]), level - 1, child_lo, child_hi, child_key0, leaves, seen)
        return total

    def drop(self) -> None:
        """Remove the tree's file (its pages are forgotten by the pool, not written)."""
        self.buffer.discard(self.file)
        self.disk.drop(self.file)


def _splice(a: np.ndarray, pos: int, new: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with ``new`` inserted before position ``pos``."""
    return np.concatenate([a[:pos], np.asarray(new, dtype=a.dtype), a[pos:]])
