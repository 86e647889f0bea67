"""Access methods beyond the heap file (Gamma paper, Sections 3 and 5).

* ``btree``: a disk-resident B+ tree, used as a non-clustered (dense) index and as the sparse
  search structure of a clustered file;
* ``clustered``: Gamma's clustered index, a relation kept in key order under a sparse B+ tree;
* ``hashfile``: Teradata's organization, relations in hash-key order and dense secondary indices
  whose entries are hashed (so a range query reads the whole index).

Every page of every structure is read and written through the node's buffer manager, so the
buffer and disk counters see each index page touched.
"""
