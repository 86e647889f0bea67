"""The buffer manager: a pool of page frames between the disk and the operators.

Operators never read the disk themselves; they *fix* a page (bring it into a frame if it is not
there, pin it so it cannot be replaced) and *unfix* it when done, saying whether they changed it
(dirty pages are written back before their frame is reused, or on ``flush``). Which unpinned page
leaves when a frame is needed is decided by a pluggable ``ReplacementPolicy`` (LRU, MRU, Clock,
LRU-K, or a student's), chosen by name.

From Volcano (Graefe and Thakkar 1992, Section 2 and "buffer contention"):

* **Hints.** ``unfix(..., hint="toss")`` marks a page as the first to go; ``hint="keep"`` shields it
  from replacement until no unhinted page is left. The hints are applied here, so every policy
  honours them without knowing about them.
* **Fix counts and grouped unfix.** A page can be fixed once per record it holds
  (``fix(..., count=N)``) and unfixed for N records in one call (``unfix(..., n=N)``), one pool-lock
  acquisition instead of N. The counter ``lock_acquisitions`` counts calls into the shared pool
  structures, the quantity Volcano's Table II attributes its contention to.
* **Clusters.** ``read_run`` transfers a run of consecutive pages in one call. Pages already in the
  pool are hits and are copied from their frames (they may be dirty); the missing ones are read
  from disk in one transfer per contiguous gap. With ``keep=False`` (the default for scans of
  files larger than the pool) the pages read are not installed in frames: they behave as if
  fixed and immediately unfixed with the toss hint, so a big scan does not flush the pool, and no
  Python work is done per page. With ``keep=True`` each page is installed like a normal fix.

Counters: ``hits`` and ``misses`` per page requested, ``reads`` and ``writes`` per page moved, and
``lock_acquisitions`` per call. The disk's own I/O meter classifies the same transfers as
sequential or random.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.errors import BufferPoolFullError, MinidbError
from minidb.plugins import lookup
from minidb.storage.disk import Disk, PagedFile

_NO_HINT, _KEEP, _TOSS = 0, 1, 2
_HINTS = {None: _NO_HINT, "keep": _KEEP, "toss": _TOSS}


@dataclass
class BufferCounters:
    hits: int = 0
    misses: int = 0
    reads: int = 0
    writes: int = 0
    lock_acquisitions: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def snapshot(self) -> BufferCounters:
        return BufferCounters(**asdict(self))

    def minus(self, before: BufferCounters) -> BufferCounters:
        return BufferCounters(**{k: v - getattr(before, k) for k, v in asdict(self).items()})


def choose_victim(policy: ReplacementPolicy, pins: np.ndarray, hint: np.ndarray) -> int:
    """The frame to replace, or -1 when every frame is pinned: Volcano's hints over a policy.

    A tossed unpinned frame goes first; otherwise the policy chooses among the unpinned frames
    without a keep hint, and among all unpinned frames only when every one is kept. Shared by
    ``BufferManager`` and Volcano's cluster pools (``minidb.volcano.pool``), so both apply the
    hints the same way whatever the policy."""
    unpinned = np.flatnonzero(pins == 0)
    if not len(unpinned):
        return -1
    hints = hint[unpinned]
    tossed = unpinned[hints == _TOSS]
    if len(tossed):
        return int(tossed[0])
    plain = unpinned[hints == _NO_HINT]
    offered = plain if len(plain) else unpinned
    victim = int(policy.choose_victim(offered))
    # one of the candidates: unpinned, and not kept while unhinted frames exist
    if not (0 <= victim < len(pins) and pins[victim] == 0
            and (len(plain) == 0 or hint[victim] == _NO_HINT)):
        raise MinidbError(
            f"replacement policy {policy.name!r} chose frame {victim}, "
            "which is not one of the candidates it was offered"
        )
    return victim


class BufferManager:
    """A fixed number of page frames over one ``Disk``, with a pluggable replacement policy."""

    def __init__(self, disk: Disk, num_frames: int, policy: str | type[ReplacementPolicy] = "lru"):
        """A pool of ``num_frames`` frames. Bad arguments (a bool or non-integer frame count, a
        policy that is neither a registered name nor a ``ReplacementPolicy`` class, a pool too
        large for this machine's memory) are one-line ``MinidbError``s."""
        if (not isinstance(num_frames, int | np.integer) or isinstance(num_frames, bool)
                or num_frames < 1):
            raise MinidbError(f"buffer_pages must be a positive integer, not {num_frames!r}")
        if isinstance(policy, str):
            policy_cls = lookup("buffer_policy", policy)
        elif isinstance(policy, type) and issubclass(policy, ReplacementPolicy):
            policy_cls = policy
        else:
            raise MinidbError(f"buffer_policy must be a policy name or a ReplacementPolicy class, not {policy!r}")
        self.disk = disk
        self.page_size = disk.page_size
        self.num_frames = int(num_frames)
        try:
            self.frames = np.zeros((self.num_frames, self.page_size), dtype=np.uint8)
            self.frame_page = np.full(self.num_frames, -1, dtype=np.int64)
            self.pins = np.zeros(self.num_frames, dtype=np.int64)
        except MemoryError:
            raise MinidbError(
                f"buffer_pages={self.num_frames:,} pages of {self.page_size} bytes do not fit in "
                "this machine's memory; use fewer buffer pages"
            ) from None
        self.policy: ReplacementPolicy = policy_cls(self.num_frames)
        self.frame_file: list[PagedFile | None] = [None] * self.num_frames
        self.dirty = np.zeros(self.num_frames, dtype=bool)
        self.hint = np.zeros(self.num_frames, dtype=np.int8)
        self._where: dict[int, np.ndarray] = {}  # file id -> frame of each page (-1 = on disk)
        self.counters = BufferCounters()

    # -- page table ---------------------------------------------------------------------------
    def _table(self, f: PagedFile) -> np.ndarray:
        table = self._where.get(f.file_id)
        if table is None or len(table) < f.num_pages:
            grown = np.full(max(f.num_pages, 16) * 2, -1, dtype=np.int64)
            if table is not None:
                grown[: len(table)] = table
            self._where[f.file_id] = table = grown
        return table

    def frame_of(self, f: PagedFile, page_no: int) -> int:
        """The frame holding ``page_no`` of ``f``, or -1 when it is not in the pool."""
        table = self._where.get(f.file_id)
        return -1 if table is None or page_no >= len(table) else int(table[page_no])

    # -- fix / unfix --------------------------------------------------------------------------
    def fix(self, f: PagedFile, page_no: int, count: int = 1) -> np.ndarray:
        """Pin ``page_no`` of ``f`` ``count`` times and return its frame (a writable view)."""
        self.counters.lock_acquisitions += 1
        if not 0 <= page_no < f.num_pages:
            raise MinidbError(f"{f.name}: page {page_no} does not exist ({f.num_pages} pages)")
        if count < 1:
            raise MinidbError(f"fix count must be at least 1, not {count!r}")
        table = self._table(f)
        frame = int(table[page_no])
        if frame >= 0:
            self.counters.hits += 1
            self.policy.page_hit(frame)
        else:
            frame = self._free_frame()
            self.frames[frame] = f.read_pages(page_no, 1)[0]
            self.counters.misses += 1  # counted once the page is really in (a failed read is no miss)
            self.counters.reads += 1
            self._install(f, page_no, frame)
            self.policy.page_loaded(frame)
        self.pins[frame] += count
        self.hint[frame] = _NO_HINT
        return self.frames[frame]

    def unfix(self, f: PagedFile, page_no: int, *, dirty: bool = False, n: int = 1,
              hint: str | None = None) -> None:
        """Release ``n`` pins of a fixed page (grouped unfix); mark it dirty if it was changed."""
        self.counters.lock_acquisitions += 1
        frame = self.frame_of(f, page_no)
        if n < 1:
            raise MinidbError(f"unfix count n must be at least 1, not {n!r}")
        if frame < 0 or self.pins[frame] < n:
            raise MinidbError(f"{f.name}: unfix of page {page_no} that is not fixed {n} times")
        if hint not in _HINTS:
            raise MinidbError(f"unknown buffer hint {hint!r}; use 'keep', 'toss' or None")
        self.pins[frame] -= n
        self.dirty[frame] |= dirty
        if hint is not None:
            self.hint[frame] = _HINTS[hint]

    def new_page(self, f: PagedFile) -> tuple[int, np.ndarray]:
        """Add an empty page at the end of ``f``, fixed once and dirty; return (page_no, frame)."""
        self.counters.lock_acquisitions += 1
        page_no = f.num_pages
        frame = self._free_frame()
        f.num_pages += 1  # the page exists from now on; it reaches the file when written back
        self.frames[frame] = 0
        self._install(f, page_no, frame)
        self.policy.page_loaded(frame)
        self.pins[frame] = 1
        self.dirty[frame] = True
        return page_no, self.frames[frame]

    # -- clusters -----------------------------------------------------------------------------
    def read_run(self, f: PagedFile, first: int, n: int, keep: bool = False,
                 out: np.ndarray | None = None) -> np.ndarray:
        """Copies of pages ``first .. first+n-1`` of ``f``, shape ``(n, page_size)``; in the
        first ``n`` pages of ``out`` when given (a buffer the caller reuses for every cluster)."""
        self.counters.lock_acquisitions += 1
        out = np.empty((n, self.page_size), dtype=np.uint8) if out is None else out[:n]
        if keep:
            for i in range(n):
                self.counters.lock_acquisitions -= 2  # fix + unfix below are part of this call
                out[i] = self.fix(f, first + i)
                self.unfix(f, first + i)
            return out
        where = self._table(f)[first : first + n]
        resident = where >= 0
        hits = int(resident.sum())
        self.counters.hits += hits
        self.counters.misses += n - hits
        if hits == 0:
            self.counters.reads += n
            return f.read_pages(first, n, out)
        out[resident] = self.frames[where[resident]]
        for frame in where[resident]:
            self.policy.page_hit(int(frame))
        missing = np.flatnonzero(~resident)
        if len(missing):
            # split the missing pages into contiguous gaps, one disk transfer each
            breaks = np.flatnonzero(np.diff(missing) != 1) + 1
            for gap in np.split(missing, breaks):
                out[gap[0] : gap[-1] + 1] = f.read_pages(first + int(gap[0]), len(gap))
                self.counters.reads += len(gap)
        return out

    # -- write-back ---------------------------------------------------------------------------
    def flush(self, f: PagedFile | None = None) -> None:
        """Write every dirty page (of ``f``, or of all files) back to disk, in page order."""
        self.counters.lock_acquisitions += 1
        frames = np.flatnonzero(self.dirty)
        if f is not None:
            frames = np.array([fr for fr in frames if self.frame_file[fr] is f], dtype=np.int64)
        order = sorted(frames, key=lambda fr: (self.frame_file[fr].file_id, self.frame_page[fr]))
        for frame in order:
            self._write_back(int(frame))

    def discard(self, f: PagedFile) -> None:
        """Forget every page of ``f`` without writing it (the file is being dropped)."""
        for frame in range(self.num_frames):
            if self.frame_file[frame] is f:
                if self.pins[frame]:
                    raise MinidbError(f"{f.name}: cannot drop a file whose page {self.frame_page[frame]} is fixed")
                self._evict(frame, write=False)
        self._where.pop(f.file_id, None)

    def dirty_pages(self, f: PagedFile) -> np.ndarray:
        """Page numbers of ``f`` that are changed in the pool and not yet written back."""
        frames = np.flatnonzero(self.dirty)
        return np.array([self.frame_page[fr] for fr in frames if self.frame_file[fr] is f], dtype=np.int64)

    def forget_all(self) -> None:
        """Empty the pool without writing anything, pins included: a rolled-back statement's
        pages are being undone on disk (``minidb.txn.undo``), so no frame may go back."""
        self.pins[:] = 0
        for frame in range(self.num_frames):
            if self.frame_file[frame] is not None:
                self._evict(frame, write=False)
        self._where.clear()

    @property
    def pinned_frames(self) -> int:
        return int((self.pins > 0).sum())

    # -- internals ----------------------------------------------------------------------------
    def _install(self, f: PagedFile, page_no: int, frame: int) -> None:
        self.frame_file[frame] = f
        self.frame_page[frame] = page_no
        self.dirty[frame] = False
        self.hint[frame] = _NO_HINT
        self._table(f)[page_no] = frame

    def _free_frame(self) -> int:
        empty = np.flatnonzero(self.frame_page < 0)
        if len(empty):
            return int(empty[0])
        victim = choose_victim(self.policy, self.pins, self.hint)
        if victim < 0:
            raise BufferPoolFullError(
                f"all {self.num_frames} buffer frames are pinned; raise buffer_pages or fix fewer pages at once"
            )
        self._evict(victim, write=True)
        return victim

    def _evict(self, frame: int, write: bool) -> None:
        if write and self.dirty[frame]:
            self._write_back(frame)
        f = self.frame_file[frame]
        if f is not None:
            self._table(f)[self.frame_page[frame]] = -1
        self.frame_file[frame] = None
        self.frame_page[frame] = -1
        self.dirty[frame] = False
        self.hint[frame] = _NO_HINT
        self.policy.page_evicted(frame)

    def _write_back(self, frame: int) -> None:
        f = self.frame_file[frame]
        page_no = int(self.frame_page[frame])
        page = self.frames[frame : frame + 1].copy()
        page[0, 4:8] = np.array([page_no], dtype="<u4").view(np.uint8)
        f.write_pages(page_no, page)
        self.frames[frame, :4] = page[0, :4]
        self.dirty[frame] = False
        self.counters.writes += 1
