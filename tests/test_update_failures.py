"""A parallel UPDATE that is refused on one node: the error is the node's own, it comes at once
(nobody waits out the exchange deadline), and with predicate fragments nothing has changed.

The nodes run with a short ``timeout`` so that a regression (consumers waiting for an end of
stream that never comes) fails on its timeout message instead of hanging for minutes."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.errors import FragmentCoverageError, MinidbError
from minidb.parallel.partitioners import Hash

TIMEOUT = 30.0

EMP = pa.table({"name": [f"e{i}" for i in range(60)],
                "salary": [1000 * (i % 20) for i in range(60)],
                "dept": [["shoe", "toy", "candy"][i % 3] for i in range(60)]})
FRAGMENTS = {0: "dept = 'shoe'", 1: "dept = 'toy'", 2: "dept = 'candy'"}


def _rows(db) -> list[tuple]:
    return sorted(tuple(r.values()) for r in db.sql("SELECT * FROM emp").to_arrow().to_pylist())


def _oracle(sql: str | None = None) -> list[tuple]:
    con = duckdb.connect()
    con.register("src", EMP)
    con.execute("CREATE TABLE emp AS SELECT * FROM src")
    if sql:
        con.execute(sql)
    return sorted(con.execute("SELECT * FROM emp").fetchall())


@pytest.mark.parametrize("update", [
    "UPDATE emp SET dept = 'pets' WHERE name = 'e0'",                         # one tuple, node 0
    "UPDATE emp SET salary = salary + 1, "
    "dept = CASE WHEN name = 'e4' THEN 'pets' ELSE dept END",                  # every node changes
])
def test_an_update_into_a_gap_is_refused_before_any_node_changes(update):
    db = minidb.connect(nodes=3, timeout=TIMEOUT)
    try:
        db.create_table("emp", EMP, partition=FRAGMENTS)
        with pytest.raises(FragmentCoverageError, match="satisfies none of the predicates"):
            db.sql(update)
        assert _rows(db) == _oracle()  # all nodes as before, not only the refusing one
        # a moving update that stays inside the fragments still works, and moves the tuple
        db.sql("UPDATE emp SET dept = 'toy' WHERE name = 'e0'")
        assert _rows(db) == _oracle("UPDATE emp SET dept = 'toy' WHERE name = 'e0'")
        assert db.sql("SELECT COUNT(*) FROM emp WHERE dept = 'toy'").to_arrow().column(0)[0].as_py() \
            == 21
    finally:
        db.close()


class Picky(Hash):
    """A hash partitioner that refuses one value: a failure in the middle of an exchange."""

    def route(self, batch: np.ndarray) -> np.ndarray:
        if np.any(batch["dept"] == b"nope" if batch["dept"].dtype.kind == "S"
                  else batch["dept"] == "nope"):
            raise MinidbError("Picky will not place dept 'nope'")
        return super().route(batch)


def test_a_producer_that_fails_stops_its_consumers_with_its_own_error():
    db = minidb.connect(nodes=3, timeout=TIMEOUT)
    try:
        db.create_table("emp", EMP, partition=Picky("dept"))
        with pytest.raises(MinidbError) as caught:
            db.sql("UPDATE emp SET dept = 'nope' WHERE name = 'e1'")
        # the producer's own error, not a consumer's "no end of stream" after the deadline,
        # nor the consumer's echo of it
        assert "Picky will not place" in str(caught.value)
        assert "no end of stream" not in str(caught.value)
        assert type(caught.value).__name__ != "ProducerFailed"
    finally:
        db.close()
