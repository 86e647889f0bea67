"""Transactions: the log, statement atomicity and recovery of one node, the data-directory lock, and locking.

* ``minidb.txn.log``: the append-only log file (records with LSNs and checksums, forces counted).
* ``minidb.txn.undo``: undo logging with FORCE at commit; restart recovery; rollback of a failed
  statement.
* ``minidb.txn.dirlock``: one process at a time in a data directory.
* ``minidb.txn.locks``: row and key-range locks, strict two-phase locking, local deadlock detection.
* ``minidb.txn.deadlock``: wait-for graphs, victims, the global deadlock detector.
* ``minidb.txn.transaction``: concurrent transactions with BROWSE / STABLE / REPEATABLE access.
"""
