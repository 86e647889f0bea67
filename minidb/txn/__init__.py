"""Transactions: the log, statement atomicity and recovery of one node, and the data-directory lock.

* ``minidb.txn.log``: the append-only log file (records with LSNs and checksums, forces counted).
* ``minidb.txn.undo``: undo logging with FORCE at commit; restart recovery; rollback of a failed
  statement.
* ``minidb.txn.dirlock``: one process at a time in a data directory.
"""
