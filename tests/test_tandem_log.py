"""NonStop SQL's transaction log on cpu 1 (Englert et al. 1989, text under Figure 9): the audit an
update counts is one record image per row it really changed (checked against DuckDB on the same
data), the log's work lands on cpu 1 (node 1) only, grows with the rows updated, and leaves the
queries that change no row alone."""

from __future__ import annotations

import math

import duckdb
import pytest

from minidb.cluster.scheduler import model_phases
from minidb.cost.profiles import get_profile
from minidb.datagen import generate
from minidb.experiments import tandem
from minidb.experiments.machines import build, measure

ROWS = 20_000
NODES = 4
PAGE = tandem.PAGE_SIZE
PACKET = get_profile("tandem_vlx").packet_bytes
RECORD = 200  # the Wisconsin-like row of the benchmark (the paper: "The rows are 200 bytes long")


@pytest.fixture(scope="module")
def data():
    return generate("tandem", ROWS, seed=1)


@pytest.fixture
def db(data):
    d = build(NODES, "tandem_vlx", PAGE)
    d.create_table("t", data, partition="range_uniform(unique2)")
    yield d
    d.close()


def _update(db, pct: int = 1):
    cut = ROWS * pct // 100
    return db.sql(f"UPDATE t SET four = four + 117 WHERE hundpct < {cut}"), cut


def test_audit_bytes_are_the_rows_really_updated_times_the_record(db, data):
    result, cut = _update(db)
    con = duckdb.connect()
    con.register("t", data)
    changed = con.execute(f"SELECT count(*) FROM t WHERE hundpct < {cut}").fetchone()[0]
    assert changed > 0
    per_node = {n: c["audit_bytes"] for n, c in result.per_node.items()}
    assert sum(per_node.values()) == changed * RECORD
    for c in result.per_node.values():  # each node audits the rows it updated itself
        assert c["audit_bytes"] == c["tuples"]["store"] * RECORD
    # the rows counted are the rows that changed: minidb's table equals DuckDB's replay
    con.execute(f"CREATE TABLE want AS SELECT unique2, CASE WHEN hundpct < {cut} "
                "THEN four + 117 ELSE four END AS four FROM t")
    got = dict(db.sql("SELECT unique2, four FROM t").to_pylist())
    want = dict(con.execute("SELECT unique2, four FROM want").fetchall())
    assert got == want


def test_the_log_work_lands_on_cpu_1_only(db):
    result, _ = _update(db)
    before = result.phases
    after = tandem.audit_log(before, PACKET, PAGE)
    assert tandem.LOG_CPU == 1
    (b,), (a,) = before, after
    audit = {n: b[n]["audit_bytes"] for n in b}
    total = sum(audit.values())
    pages = math.ceil(total / PAGE)
    for n in b:
        delta = {k: a[n].get(k, 0) - b[n].get(k, 0) for k in a[n] if not isinstance(a[n][k], dict)}
        delta = {k: v for k, v in delta.items() if v}
        blocks = math.ceil(audit[n] / PACKET)
        if n == 1:
            received = sum(math.ceil(audit[m] / PACKET) for m in b if m != 1)
            assert delta == {"packets_short_circuited": blocks, "bytes_short_circuited": audit[n],
                             "packets_received": received, "pages_written_seq": pages,
                             "buffer_calls": pages, "log_pages": pages, "log_forces": 1}
        else:  # the other processors only send their audit to cpu 1
            assert delta == {"packets_sent_remote": blocks, "bytes_sent_remote": audit[n]}
    assert b[1].get("log_pages", 0) == 0  # the phases given are left unchanged
    # priced: only cpu 1's disc path gets longer, by its log pages written in sequence
    vlx = get_profile("tandem_vlx")
    t_before = result.modeled(vlx, PAGE).phases[0].nodes
    t_after = model_phases(after, result.scheduler_messages, vlx, PAGE).phases[0].nodes
    for n in b:
        extra = pages * vlx.sequential_page_s(PAGE) if n == 1 else 0.0
        assert t_after[n].disk_s == pytest.approx(t_before[n].disk_s + extra)


def test_the_log_grows_with_the_rows_updated(db):
    one, _ = _update(db, 1)
    five, _ = _update(db, 5)
    log = [tandem.audit_log(r.phases, PACKET, PAGE)[0][1]["log_pages"] for r in (one, five)]
    assert log[1] > 4 * log[0] > 0


def test_queries_that_change_no_row_get_no_log_work(db):
    for query, text in tandem.statements(ROWS).items():
        if query == "update_1pct":
            continue
        m_plain = measure(db, text, drop="result" if "CREATE" in text else None,
                          startup="serial")
        m_log = measure(db, text, drop="result" if "CREATE" in text else None, startup="serial",
                        extra_work=lambda ph: tandem.audit_log(ph, PACKET, PAGE))
        assert m_log.modeled_s == m_plain.modeled_s, query
        assert all(not c.get("log_pages") for c in m_log.per_node.values()), query


def test_a_dedicated_log_processor_takes_the_log_off_cpu_1(db):
    """The paper's remedy ("the database discs could be moved from cpu 1"): with the log on a
    processor of its own, every partition only sends its audit."""
    result, _ = _update(db)
    (a,) = tandem.audit_log(result.phases, PACKET, PAGE, log_cpu="log")
    assert a["log"]["log_pages"] > 0 and a["log"]["packets_received"] > 0
    assert all(not a[n].get("log_pages") and a[n]["packets_sent_remote"] > 0
               for n in range(NODES))
