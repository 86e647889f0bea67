"""Commit protocols as plug-ins (kind ``"commit"``), and the simulated network they run on.

* ``base``: the ``CommitProtocol`` base class (four handlers) and the messages.
* ``simnet``: the seeded simulated network (delay, drop, duplicate, partition, crash).
* ``raynet``: the same network with every site a Ray actor whose log is a file; a crash kills
  the process. One seed gives the same run on both.
* ``enginenet``: the parallel engine's own nodes: the protocol ``connect(nodes=N, data_dir=D,
  commit=name)`` names commits every statement, the participant role on each node's journal.
* ``two_pc``, ``presumed_abort``, ``presumed_commit``, ``three_pc``, ``group_commit``: the
  built-in protocols, one file each.
* ``matrix``: the fault matrix every protocol is checked over.

A student's protocol is a ``CommitProtocol`` subclass decorated with
``@register("commit", "my_2pc")``; the fault matrix, the experiment and ``minidb.connect(...,
commit="my_2pc")`` (a real parallel database) select it by name.
"""

from minidb.txn.commit import (  # noqa: F401  (register the built-ins)
    group_commit,
    presumed_abort,
    presumed_commit,
    three_pc,
    two_pc,
)
