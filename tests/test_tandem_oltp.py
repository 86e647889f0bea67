"""NonStop SQL's DebitCredit OLTP scaleup and parallel index maintenance (Figure 3 and the section
"OLTP Scaleup"): the rows minidb changed agree with a DuckDB replay, each index agrees with its
table, the counters add up, and both findings pass on the Tandem profile and fail on a
deliberately broken one."""

from __future__ import annotations

import dataclasses
import math

import duckdb
import pyarrow as pa
import pytest

from minidb.cost.profiles import get_profile
from minidb.experiments import run_experiment
from minidb.experiments import tandem_oltp as oltp
from minidb.experiments.findings import TANDEM_CONSTANT_TIME, check_findings
from minidb.plugins import _REGISTRY


@pytest.fixture
def broken_vlx(monkeypatch):
    """``broken_vlx(**changes)``: the registered tandem_vlx replaced by a copy with ``changes``
    for one test (a deliberately wrong machine a finding must catch)."""

    def apply(**changes):
        vlx = _REGISTRY["hardware_profile"]["tandem_vlx"]
        monkeypatch.setitem(_REGISTRY["hardware_profile"], "tandem_vlx",
                            dataclasses.replace(vlx, **changes))

    return apply


def status(rows, name):
    return {f.name: f for f in check_findings(rows, "tandem")}[name]


@pytest.fixture(scope="module")
def debitcredit():
    dc = oltp.DebitCredit(4, "tandem_vlx", scale=0.001, seed=3)  # 100 accounts per branch
    dc.run(30)
    yield dc
    dc.close()


def _minidb(dc, table, key, column):
    out = {}
    for p in dc.processors:
        out.update(dict(p.db.sql(f"SELECT {key}, {column} FROM {table}").to_pylist()))
    return out


def test_balances_and_history_equal_a_duckdb_replay(debitcredit):
    dc = debitcredit
    assert len(dc.transactions) == 4 * 30
    con = duckdb.connect()
    tx = pa.table({name: [t[i] for t in dc.transactions]
                   for i, name in enumerate(("tid", "bid", "aid", "delta"))})
    con.register("tx", tx)
    for table, key, column in (("account", "aid", "abalance"), ("teller", "tid", "tbalance"),
                               ("branch", "bid", "bbalance")):
        expected = dict(con.execute(f"SELECT {key}, SUM(delta) FROM tx GROUP BY {key}").fetchall())
        got = _minidb(dc, table, key, column)
        assert {k: v for k, v in got.items() if k in expected} == expected
        assert all(v == 0 for k, v in got.items() if k not in expected)
    history = sorted(row for p in dc.processors
                     for row in p.db.sql("SELECT tid, bid, aid, delta FROM history").to_pylist())
    assert len(history) == len(dc.transactions)
    assert history == sorted(con.execute("SELECT tid, bid, aid, delta FROM tx").fetchall())


def test_each_processor_holds_its_branches_and_runs_its_share(debitcredit):
    dc = debitcredit
    for i, p in enumerate(dc.processors):
        bids = [b for (b,) in p.db.sql("SELECT bid FROM branch").to_pylist()]
        assert bids == list(range(i * 8, i * 8 + 8))
        assert p.db.sql("SELECT COUNT(*) FROM account").to_pylist() == [(8 * dc.apb,)]
        assert p.db.sql("SELECT COUNT(*) FROM history").to_pylist() == [(30,)]


def test_counters_add_up(debitcredit):
    dc = debitcredit
    remote = sum(1 for _, b, a, _ in dc.transactions if dc.home(b) != dc.home(a // dc.apb))
    assert 0 < remote < len(dc.transactions) * 0.3
    sent = sum(p.work.packets_sent_remote for p in dc.processors)
    received = sum(p.work.packets_received for p in dc.processors)
    # request + reply of the account update, and prepare / yes / commit / ack
    assert sent == received == 6 * remote
    local = sum(p.work.packets_short_circuited for p in dc.processors)
    n = len(dc.transactions)
    # 3 local requests with replies, the local account's pair, one audit hand-off per processor
    assert local == 3 * 2 * n + 2 * (n - remote) + n + remote
    audit = sum(p.audit_bytes for p in dc.processors)
    assert audit == n * (6 * oltp.RECORD_BYTES + oltp.HISTORY_BYTES)
    phase = dc.phase()
    for i, p in enumerate(dc.processors):
        assert phase[f"log{i}"].pages_written_seq == math.ceil(p.audit_bytes / oltp.PAGE_SIZE)
        # every update writes its page (minidb writes a statement's pages when it ends)
        assert p.work.pages_written_random >= 3 * 30


def test_each_index_agrees_with_its_table():
    dbs = []
    times = oltp.index_insert_times(3, rows=300, inserts=20, profile="tandem_vlx", scale=0.01,
                                    keep=dbs)
    table, *indices = dbs
    try:
        base = table.sql("SELECT * FROM t").to_arrow()
        assert base.num_rows == 320
        con = duckdb.connect()
        con.register("base", base)
        for column, ix in zip(oltp.INDEX_COLUMNS[:3], indices, strict=True):
            got = sorted(ix.sql(f"SELECT {column}, unique2 FROM ix").to_pylist())
            assert got == sorted(con.execute(f"SELECT {column}, unique2 FROM base").fetchall())
            one = got[-1]
            found = ix.sql(f"SELECT unique2 FROM ix WHERE {column} = {one[0]}", hint="index")
            assert (one[1],) in found.to_pylist()
    finally:
        for db in dbs:
            db.close()
    assert times["release1"] > times["release2"] > 0


def _index_rows(profile):
    return run_experiment("tandem.index_maintenance", quick=True, indices=[1, 10], inserts=15,
                          profile=profile)


def test_index_finding_passes_on_the_tandem_profile():
    result = status(_index_rows("tandem_vlx"), "tandem.index_maintenance_parallel")
    assert result.status == "pass", result.detail
    assert TANDEM_CONSTANT_TIME == pytest.approx(1.21)


def test_index_finding_fails_when_messages_dominate(broken_vlx):
    """Broken profile: a message costs 100 times the instructions; the k requests the table's
    process sends then dominate and even Release 2's insert grows with the indices."""
    broken_vlx(instr_packet=get_profile("tandem_vlx").instr_packet * 100)
    result = status(_index_rows("tandem_vlx"), "tandem.index_maintenance_parallel")
    assert result.status == "fail", result.detail


def _oltp_rows(profile):
    return run_experiment("tandem.oltp_scaleup", quick=True, processors=[4, 32], transactions=8,
                          warmup=4, profile=profile)


def test_oltp_finding_passes_on_the_tandem_profile():
    rows = _oltp_rows("tandem_vlx")
    result = status(rows, "tandem.oltp_scaleup_linear")
    assert result.status == "pass", result.detail
    response = [r["value"] for r in rows if r["metric"] == "response_time"]
    assert max(response) / min(response) < 1.1  # the same response time at every size
    rating = [r for r in rows if r["reference"]]
    assert [(r["row"], r["column"]) for r in rating] == [("vlx_processor", "cpus_1")]


def test_oltp_finding_fails_on_a_shared_bus_that_saturates(broken_vlx):
    """Broken profile: a 0.01 Mbit/s bus shared by all processors carries every remote request,
    so the remote traffic of 32 processors, not their discs, bounds the throughput."""
    broken_vlx(interconnect_mbit_s=0.01)
    result = status(_oltp_rows("tandem_vlx"), "tandem.oltp_scaleup_linear")
    assert result.status == "fail", result.detail


def test_oltp_finding_judges_rows():
    def rows(values):
        return [{"experiment": "tandem.oltp_scaleup", "metric": "oltp_scaleup", "clock": "modeled",
                 "row": "debitcredit", "column": f"cpus_{n}", "value": v,
                 "parameters": {"processors": n, "baseline_processors": 4}}
                for n, v in values.items()]
    assert status(rows({4: 1.0, 8: 2.0, 32: 7.0}), "tandem.oltp_scaleup_linear").status == "pass"
    assert status(rows({4: 1.0, 8: 2.0, 32: 6.5}), "tandem.oltp_scaleup_linear").status == "fail"
    assert status(rows({4: 1.0}), "tandem.oltp_scaleup_linear").status == "not checked"
