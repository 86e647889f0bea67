"""A node's log file: typed records with sequence numbers (LSNs) and checksums, forced on demand.

The log is an append-only file of records. Each record is a 17-byte header and a payload:

    offset  size  field
    0       4     payload length
    4       4     CRC-32 of the LSN, the type and the payload
    8       8     LSN: the record's log sequence number (1, 2, 3, ...)
    16      1     type (``BEGIN``, ``BEFORE``, ``CREATE``, ``COMMIT``, ...; see ``minidb.txn.undo``)

``append`` hands the record to the operating system (one ``write``): it survives the death of
the process (``kill -9``), not a power failure. ``force`` makes every record appended so far
survive a power failure too (``fsync``): this is the "log force" the commit protocols count
(Gray's write-ahead rule, Tandem's group commit). A record that was being written when the
process died is torn; reading stops at the first record whose length runs past the end of the
file or whose checksum fails, so a torn tail is simply not there.

``reset`` empties the log once nothing in it is needed any more (every change it describes is
committed and on disk, or undone). LSNs go on counting from where they were, so an LSN names one
record for the life of the ``LogFile``.

Simplified: one log file a node, never archived; there is no log buffer in memory (every append
is a ``write`` of its own), which costs system calls, not I/Os.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

HEADER = struct.Struct("<IIQB")


@dataclass
class LogCounters:
    """The log's work: records and bytes appended, forces (``fsync`` calls) made."""

    records: int = 0
    bytes: int = 0
    forces: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class LogRecord:
    lsn: int
    type: int
    payload: bytes


def _crc(lsn: int, kind: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<QB", lsn, kind)))


class LogFile:
    """The append-only log of one node, in ``path``."""

    def __init__(self, path: str | os.PathLike, read_only: bool = False):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDONLY if read_only else os.O_RDWR | os.O_CREAT, 0o644)
        self.counters = LogCounters()
        records = list(self.records())
        self._end = self._valid_end()
        if not read_only and os.fstat(self._fd).st_size > self._end:  # a torn tail: cut it off before appending
            os.ftruncate(self._fd, self._end)
        self.next_lsn = records[-1].lsn + 1 if records else 1
        self._forced_to = self._end  # what is in the file now is as forced as it will get

    def append(self, kind: int, payload: bytes = b"") -> int:
        """Write one record after the last; return its LSN."""
        lsn = self.next_lsn
        data = HEADER.pack(len(payload), _crc(lsn, kind, payload), lsn, kind) + payload
        os.pwrite(self._fd, data, self._end)
        self._end += len(data)
        self.next_lsn += 1
        self.counters.records += 1
        self.counters.bytes += len(data)
        return lsn

    def force(self) -> None:
        """Make every appended record durable (one ``fsync``), if any is not yet."""
        if self._forced_to < self._end:
            os.fsync(self._fd)
            self._forced_to = self._end
            self.counters.forces += 1

    @property
    def empty(self) -> bool:
        return self._end == 0

    @property
    def size(self) -> int:
        """Bytes of intact records in the file."""
        return self._end

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def records(self) -> Iterator[LogRecord]:
        """Every intact record, oldest first; stops at a torn or damaged tail."""
        for lsn, kind, payload, _ in self._scan():
            yield LogRecord(lsn, kind, payload)

    def _valid_end(self) -> int:
        end = 0
        for *_, stop in self._scan():
            end = stop
        return end

    def _scan(self):
        size = os.fstat(self._fd).st_size
        pos = 0
        while pos + HEADER.size <= size:
            length, crc, lsn, kind = HEADER.unpack(os.pread(self._fd, HEADER.size, pos))
            if pos + HEADER.size + length > size:
                return  # torn: the write of this record did not finish
            payload = os.pread(self._fd, length, pos + HEADER.size)
            if _crc(lsn, kind, payload) != crc:
                return
            pos += HEADER.size + length
            yield lsn, kind, payload, pos

    def reset(self) -> None:
        """Empty the log (durably); LSNs continue."""
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)
        self._end = self._forced_to = 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_log(path: str | os.PathLike) -> list[LogRecord]:
    """The intact records of the log in ``path`` (none if there is no such file), read without
    changing it: how another process looks at a log it does not own."""
    try:
        log = LogFile(path, read_only=True)
    except FileNotFoundError:
        return []
    try:
        return list(log.records())
    finally:
        log.close()
