"""Volcano on a shared-memory machine (Graefe and Thakkar 1992): the paper's parallel sort and
the buffer-manager mechanisms its tuning study switched on and off.

The shared-nothing engine (``minidb.cluster``) gives every node its own memory and buffer pool.
Volcano ran on a Sequent Symmetry instead: several processes on one machine, one disk each,
sharing one buffer in shared memory. This package rebuilds that node model:

``records``   the sort benchmark's 100-byte records laid out on pages and clusters, padded to
              an alignment of 1, 4 or 16 bytes (§3.2, §4.2, §6.3)
``exchange``  Volcano's exchange operator on shared memory: the engine's one exchange
              (``minidb.parallel.exchange``) with every inbox in the same memory, whole packets,
              an end-of-stream tag and bounded inboxes for flow control (§2.1)
``unfix``     the ways of unfixing records in the buffer: one call per record, or calls
              gathered in process-private space (procedure or macro, one entry or a small hash
              table) (§5, §5.2)
``pool``      the shared buffer: bounded pools of clusters with LRU and keep / toss hints,
              each behind its lock, with every acquisition counted (§2.1, §4.1, §5, §5.1)
``psort``     the parallel external sort: range redistribution by quantiles through exchange,
              quicksort runs as large as the sort space, merges, the last merge in ``next``
              (§2.2, §2.3), and the flush at the end, its starts staggered or not (§6.1)

The sort really sorts (its output is checked against DuckDB's ``ORDER BY``) and counts what it
did; ``minidb.cost.volcano_model`` prices the counts on the Sequent profile, with the pool lock as
a queueing centre, and ``minidb.experiments.volcano`` runs the paper's tuning steps.
"""
