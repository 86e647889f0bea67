"""Where a diskless processor's temporary pages go (Gamma paper §2.1, §6).

Gamma ran its joins on processors without disks as well as on the eight with one (the Remote and
Allnodes placements). A joining processor still writes temporary files: Simple hash spools the
building tuples above its cut to an overflow file (§6), GRACE and Hybrid hash write their
partitions. A processor with no disk can only keep such a file on a processor that has one, so
every page it writes crosses the network to that processor's disk, and every page it reads
back crosses it again the other way.

minidb's nodes all keep their temporary files in their own storage, so a diskless node's
counters show page I/O it could not have done itself. ``ship_diskless_io`` rewrites one phase's
counters as the machine would have done the work: the page reads and writes move to a *partner*
disk node (the k-th diskless node's is disk node ``k mod #disks``), which pays the disk time and
the protocol CPU of receiving or sending the pages; the diskless node pays for sending the pages
it writes and receiving the ones it reads. Its buffer calls stay where they are (its buffer pool
holds the pages), and ``pages_shipped`` records how many pages went over the network this way.
"""

from __future__ import annotations

import math

IO_FIELDS = ("pages_read_seq", "pages_read_random", "pages_written_seq", "pages_written_random")


def ship_diskless_io(counters: list[dict], disk: list[int], diskless: list[int], page_size: int,
                     packet_bytes: int) -> list[dict]:
    """One phase's counters (index = node id) with each diskless node's page I/O done at its
    partner disk node and carried over the network; the input is not changed."""
    if not disk or not diskless:
        return counters
    out = [dict(c) for c in counters]
    for k, node in enumerate(diskless):
        mine = out[node]
        if not any(mine.get(f, 0) for f in IO_FIELDS):
            continue
        partner = out[disk[k % len(disk)]]
        for f in IO_FIELDS:
            partner[f] = partner.get(f, 0) + mine.get(f, 0)
        written = mine.get("pages_written_seq", 0) + mine.get("pages_written_random", 0)
        read = mine.get("pages_read_seq", 0) + mine.get("pages_read_random", 0)
        for sender, receiver, pages in ((mine, partner, written), (partner, mine, read)):
            if not pages:
                continue
            nbytes = pages * page_size
            packets = math.ceil(nbytes / packet_bytes)
            sender["packets_sent_remote"] = sender.get("packets_sent_remote", 0) + packets
            sender["bytes_sent_remote"] = sender.get("bytes_sent_remote", 0) + nbytes
            receiver["packets_received"] = receiver.get("packets_received", 0) + packets
            receiver["bytes_received"] = receiver.get("bytes_received", 0) + nbytes
        mine["pages_shipped"] = mine.get("pages_shipped", 0) + written + read
        for f in IO_FIELDS:
            mine[f] = 0
    return out


__all__ = ["IO_FIELDS", "ship_diskless_io"]
