"""Volcano's shared-memory engine: record layout, unfix schemes, the exchange port and the
parallel sort (minidb.volcano), checked against DuckDB's ORDER BY and against invariants: no
record lost or duplicated, ranges in order, fixes and unfixes balanced, counters that add up."""

from __future__ import annotations

import threading

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minidb.errors import MinidbError
from minidb.volcano.pool import SharedBuffer, cluster_id
from minidb.volcano.psort import SortSetup, parallel_sort, quantiles
from minidb.volcano.records import RECORD_DTYPE, Layout, from_table, sort_records, to_table
from minidb.volcano.unfix import GroupedUnfix, SimpleUnfix, scheme

KB = 1024


# -- records and layout (§3.2, §4.2, §6.3) -------------------------------------------------------

def test_alignment_pads_a_100_byte_record_to_112_bytes_at_16_and_not_at_4():
    assert Layout(4 * KB, 1).record_bytes == Layout(4 * KB, 4).record_bytes == 100
    assert Layout(4 * KB, 16).record_bytes == 112  # §6.3: 12 bytes of padding
    assert Layout(4 * KB, 1).records_per_cluster == 40
    assert Layout(32 * KB, 16).records_per_cluster == 8 * (4096 // 112)
    assert Layout(32 * KB, 4).clusters(1000) == -(-1000 // 320)


@pytest.mark.parametrize("bad", [dict(alignment=8), dict(cluster_bytes=6 * KB),
                                 dict(cluster_bytes=2 * KB)])
def test_bad_layouts_are_clear_errors(bad):
    with pytest.raises(MinidbError, match="alignment|whole number"):
        Layout(**{"cluster_bytes": 4 * KB, "alignment": 1, **bad})


def test_records_round_trip_through_arrow():
    records = sort_records(500, seed=3)
    assert records.dtype == RECORD_DTYPE and records.dtype.itemsize == 100
    assert np.array_equal(from_table(to_table(records)), records)
    # the payload starts with the record number: every record is there once
    numbers = records["payload"].astype("S20").astype(np.int64)
    assert np.array_equal(numbers, np.arange(500))


# -- unfix schemes (§5.2) ------------------------------------------------------------------------

def _reference_calls(clusters, grouped: GroupedUnfix):
    """Grouped unfixing written record by record, the way a student would."""
    table, calls = {}, []
    for c in clusters:
        slot = int(grouped.slot(np.array([c]))[0])
        if slot in table and table[slot][0] != c:
            calls.append(tuple(table.pop(slot)))
        entry = table.setdefault(slot, [c, 0])
        entry[1] += 1
    calls += [tuple(table[s]) for s in sorted(table)]
    return [(int(a), int(b)) for a, b in calls]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 7), max_size=60), st.sampled_from([1, 2, 4, 16]),
       st.lists(st.integers(0, 60), max_size=3))
def test_grouped_unfix_matches_a_record_by_record_table_in_any_pieces(clusters, entries, cuts):
    grouped = GroupedUnfix(entries)
    want = _reference_calls(clusters, grouped)
    ids, counts = grouped.calls(np.array(clusters, dtype=np.int64))
    assert list(zip(ids.tolist(), counts.tolist(), strict=False)) == want
    gatherer = grouped.gatherer()  # the same stream handed over in pieces
    got = []
    for piece in np.split(np.array(clusters, dtype=np.int64), sorted(c % 61 for c in cuts)):
        got += list(zip(*[a.tolist() for a in gatherer.unfix(piece)], strict=False))
    got += list(zip(*[a.tolist() for a in gatherer.close()], strict=False))
    assert got == want
    assert sum(c for _, c in want) == len(clusters)  # every record unfixed once


def test_simple_unfix_calls_once_per_record_and_grouping_once_per_cluster():
    stream = np.repeat(np.arange(5), 40)
    assert len(SimpleUnfix().calls(stream)[0]) == 200
    assert GroupedUnfix(1).calls(stream)[1].tolist() == [40] * 5
    # interleaved clusters defeat a single entry; a table with room for both keeps them apart
    interleaved = np.tile([10, 11], 50)
    assert len(GroupedUnfix(1).calls(interleaved)[0]) == 100
    assert scheme("macro_16").name == "macro_16" and scheme("simple").name == "simple"
    with pytest.raises(MinidbError, match="unknown unfix scheme"):
        scheme("macro")


def test_shared_buffer_counts_calls_per_pool_by_device():
    buffer = SharedBuffer(pools=2, unfix=SimpleUnfix())
    buffer.fix(0, 3, clusters=2, records=4)           # device 3 -> pool 1
    buffer.unfix(0, "filter", np.array([cluster_id(3, 0)] * 4))
    buffer.release(1, 4, clusters=5)                  # device 4 -> pool 0
    c = buffer.counters
    assert c.total("fix", pool=1) == 2 and c.total("unfix", pool=1) == 4
    assert c.total("release", process=1, pool=0) == 5
    assert buffer.balanced()


# -- the exchange on shared memory (§2.1) ----------------------------------------------------

def _run_exchange(processes: int, rows: int, flow_control, packet_records=7):
    """Every process produces ``rows`` records into one exchange and consumes its share."""
    from minidb.datagen.sortrec import SCHEMA
    from minidb.parallel.partitioners import Hash
    from minidb.volcano.exchange import RecordsSource, SharedMemoryExchange

    data = sort_records(rows * processes, seed=11)
    exchange = SharedMemoryExchange("x", processes, packet_records * 100, flow_control)
    received = [[] for _ in range(processes)]
    producers_of = [set() for _ in range(processes)]
    splits = [None] * processes

    def producer(p):
        batches = (data[p::processes][i:i + 5] for i in range(0, rows, 5))
        support = Hash("key")
        support.fit(None, processes)
        splits[p] = exchange.producer(RecordsSource(batches, SCHEMA), p, support)
        try:
            splits[p].run()
        except BaseException as error:
            exchange.fail(error)
            raise

    def consumer(c):
        receive = exchange.consumer(c, SCHEMA)
        for batch in receive:
            received[c].append(batch)
            producers_of[c].add(receive.last_producer)

    threads = [threading.Thread(target=producer, args=(p,)) for p in range(processes)]
    threads += [threading.Thread(target=consumer, args=(c,)) for c in range(processes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "the exchange hung"
    return data, [np.concatenate(r) if r else np.empty(0, RECORD_DTYPE) for r in received], \
        splits, producers_of


@pytest.mark.parametrize("processes,flow", [(1, 4), (3, 1), (4, None), (5, 2)])
def test_exchange_delivers_every_record_once_to_its_consumer(processes, flow):
    data, received, splits, producers_of = _run_exchange(processes, 103, flow)
    assert np.array_equal(np.sort(np.concatenate(received)["payload"]), np.sort(data["payload"]))
    for c, got in enumerate(received):  # the support function's choice, for every record
        from minidb.parallel.partitioners import Hash

        support = Hash("key")
        support.fit(None, processes)
        assert np.all(support.route(got) == c)
        assert producers_of[c] <= set(range(processes))
    # whole packets of 7 records leave as they fill; the rest goes with end of stream
    for split in splits:
        sent = split.counters["packets_sent_remote"] + split.counters["packets_short_circuited"]
        assert sent >= 103 // 7


def test_a_failing_producer_stops_the_consumers_with_its_error():
    from minidb.datagen.sortrec import SCHEMA
    from minidb.parallel.partitioners import Hash
    from minidb.volcano.exchange import RecordsSource, SharedMemoryExchange

    exchange = SharedMemoryExchange("x", 2, 300, flow_control=2)
    data = sort_records(10, seed=1)

    def bad_batches():
        yield data
        raise ValueError("disk 1 is gone")

    errors = []

    def consumer(c):
        try:
            list(exchange.consumer(c, SCHEMA))
        except MinidbError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=consumer, args=(c,)) for c in range(2)]
    for t in threads:
        t.start()
    support = Hash("key")
    support.fit(None, 2)
    with pytest.raises(ValueError):
        try:
            exchange.producer(RecordsSource(bad_batches(), SCHEMA), 0, support).run()
        except ValueError as error:
            exchange.fail(error)
            raise
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert len(errors) == 2 and all("disk 1 is gone" in e for e in errors)


def test_a_failing_process_fails_the_sort_with_its_error(monkeypatch):
    from minidb.volcano import psort

    def broken(*args):
        raise RuntimeError("process 1 crashed")

    monkeypatch.setattr(psort, "_drive", broken)
    with pytest.raises(MinidbError, match="process 1 crashed"):
        parallel_sort(sort_records(2000), SortSetup(processes=3))


# -- the parallel sort (§2.2, §2.3) --------------------------------------------------------------

def _duckdb_order(records: np.ndarray) -> list[bytes]:
    con = duckdb.connect()
    con.register("input", to_table(records))
    keys = con.sql("SELECT key FROM input ORDER BY key").fetchall()
    return [k.encode() for (k,) in keys]


def _tied_records(rows: int, seed: int) -> np.ndarray:
    """Records with few distinct keys (many ties) and numbered payloads."""
    rng = np.random.default_rng(seed)
    out = np.empty(rows, RECORD_DTYPE)
    letters = rng.integers(ord("a"), ord("e"), size=(rows, 10), dtype=np.uint8)
    letters[:, 2:] = ord("x")
    out["key"] = letters.view("S10").ravel()
    out["payload"] = np.char.zfill(np.arange(rows).astype("S20"), 20)
    return out


SETUPS = [
    dict(processes=1),
    dict(processes=3, cluster_bytes=8 * KB, alignment=16),
    dict(processes=4, unfix="macro_4", pools=2, quantiles="sampled"),
    # a sort space of 3 clusters per process: fan-in 2, several merge levels
    dict(processes=2, cluster_bytes=4 * KB, sort_space_bytes=2 * 3 * 4 * KB),
    dict(processes=5, unfix="procedure_1", flow_control=None, sort_space_bytes=5 * 4 * 4 * KB),
]


@pytest.mark.parametrize("config", SETUPS)
@pytest.mark.parametrize("data", ["sortrec", "ties"])
def test_parallel_sort_equals_duckdb_order_by(config, data):
    records = sort_records(3000, seed=7) if data == "sortrec" else _tied_records(2500, 5)
    run = parallel_sort(records, SortSetup(**config))
    out = run.output()
    assert out["key"].tolist() == _duckdb_order(records)
    # no record lost or duplicated: the payloads are the input's, once each
    assert np.array_equal(np.sort(out["payload"]), np.sort(records["payload"]))
    # range-partitioned: every key of range i sorts before every key of range i + 1
    nonempty = [p for p in run.partitions if len(p)]
    assert all(a["key"][-1] <= b["key"][0] for a, b in zip(nonempty, nonempty[1:], strict=False))
    assert all(np.all(p["key"][1:] >= p["key"][:-1]) for p in run.partitions)
    assert run.buffer.balanced()


def test_ties_keep_input_order_within_a_range():
    records = _tied_records(2000, 9)
    run = parallel_sort(records, SortSetup(processes=1, sort_space_bytes=3 * 4 * KB))
    out = run.output()
    for key in np.unique(out["key"]):
        numbers = out["payload"][out["key"] == key].astype(np.int64)
        assert np.all(np.diff(numbers) > 0)


def test_counters_add_up():
    records = sort_records(20_000, seed=2)
    setup = SortSetup(processes=4, cluster_bytes=8 * KB, sort_space_bytes=4 * 12 * 8 * KB)
    run = parallel_sort(records, setup)
    total, counters = run.total(), run.buffer.counters
    per_cluster = setup.layout.records_per_cluster
    # §5: every record unfixed by the filter, the sort and the driver, one call each
    assert counters.total("unfix") == 3 * len(records)
    assert dict(counters.records_unfixed_by) == {"filter": 20_000, "sort": 20_000,
                                                 "driver": 20_000}
    assert total.records_scanned == total.records_received == total.records_out == 20_000
    assert total.clusters_read_sequential == sum(-(-5000 // per_cluster) for _ in range(4))
    # runs as large as the sort space; one merge level suffices here
    capacity = setup.space_clusters * per_cluster
    assert [w.runs for w in run.work] == [-(-w.records_received // capacity) for w in run.work]
    assert all(w.merge_levels == 1 for w in run.work)
    # each run cluster is written, read back once, and given up twice
    written = sum(w.clusters_written_sequential for w in run.work)
    outputs = sum(setup.layout.clusters(w.records_out) for w in run.work)
    assert written - outputs == total.clusters_read_random
    assert counters.total("release") == 2 * total.clusters_read_random
    # records not routed to themselves crossed between processes
    assert total.records_sent == sum(w.records_received for w in run.work) - sum(
        (np.searchsorted(run.bounds, p["key"]) == i).sum()
        for i, p in enumerate(records[i::4] for i in range(4)))


def test_grouped_unfix_calls_once_per_cluster_each_operator():
    records = sort_records(20_000, seed=2)
    simple = parallel_sort(records, SortSetup(processes=4, cluster_bytes=8 * KB))
    grouped = parallel_sort(records, SortSetup(processes=4, cluster_bytes=8 * KB,
                                               unfix="macro_1"))
    g = grouped.buffer.counters
    assert g.record_calls_by["filter"] == grouped.total().clusters_read_sequential
    assert g.record_calls_by["sort"] == grouped.total().packets_received
    assert g.record_calls_by["driver"] == sum(grouped.setup.layout.clusters(w.records_out)
                                              for w in grouped.work)
    # grouping changes the unfix calls and nothing else
    s = simple.buffer.counters
    assert s.total("fix") == g.total("fix") and s.total("release") == g.total("release")
    assert np.array_equal(simple.output(), grouped.output())


def test_more_merge_levels_with_a_tiny_sort_space():
    records = sort_records(5000, seed=1)
    run = parallel_sort(records, SortSetup(processes=1, cluster_bytes=4 * KB,
                                           sort_space_bytes=3 * 4 * KB))
    work = run.work[0]
    # 40-record clusters, 120-record runs: 42 runs, fan-in 2 -> 6 levels
    assert work.runs == 42 and work.merge_levels == 6
    assert np.all(run.output()["key"][1:] >= run.output()["key"][:-1])


def test_sampled_quantiles_balance_the_ranges():
    records = sort_records(40_000, seed=4)
    run = parallel_sort(records, SortSetup(processes=8, quantiles="sampled",
                                           cluster_bytes=32 * KB, sort_space_bytes=12 << 20))
    sizes = [len(p) for p in run.partitions]
    assert sum(sizes) == 40_000 and max(sizes) < 1.3 * 40_000 / 8
    exact = quantiles([records], 8, "given")
    keys = np.sort(records["key"])
    assert exact.tolist() == [keys[i * 5000 - 1] for i in range(1, 8)]


@pytest.mark.parametrize("bad,match", [
    (dict(processes=0), "at least one process"),
    (dict(quantiles="guessed"), "quantiles"),
    (dict(unfix="lazy"), "unknown unfix scheme"),
    (dict(processes=16, cluster_bytes=32 * KB, sort_space_bytes=1 << 20), "under 3 clusters"),
    (dict(pools=0), "at least one pool"),
    # these used to escape as a ZeroDivisionError, a TypeError and a numpy ValueError
    (dict(cluster_bytes=0), "whole number of"),
    (dict(processes=2.5), "at least one process"),
    (dict(processes=3, quantiles="sampled", seed=-1), "seed"),
    (dict(flow_control=0), "at least one packet"),
])
def test_bad_sort_setups_are_clear_errors(bad, match):
    with pytest.raises(MinidbError, match=match):
        parallel_sort(sort_records(100), SortSetup(**bad))


def test_wrong_records_are_refused():
    with pytest.raises(MinidbError, match="sort records"):
        parallel_sort(np.arange(10), SortSetup(processes=2))


@pytest.mark.parametrize("quantiles_how", ["given", "sampled"])
@pytest.mark.parametrize("rows,processes", [(0, 1), (0, 4), (1, 3), (7, 16)])
def test_tiny_and_empty_inputs_sort(quantiles_how, rows, processes):
    records = sort_records(rows, seed=3) if rows else np.empty(0, RECORD_DTYPE)
    run = parallel_sort(records, SortSetup(processes=processes, quantiles=quantiles_how,
                                           sort_space_bytes=processes * 3 * 4 * KB))
    out = run.output()
    assert len(out) == rows and run.buffer.balanced()
    assert np.array_equal(np.sort(out["payload"]), np.sort(records["payload"]))
    assert run.buffer.counters.total("unfix") == 3 * rows


def test_one_key_everywhere_lands_in_one_range_and_still_sorts():
    records = sort_records(500, seed=1)
    records["key"] = b"AAAAAAAAAA"
    for how in ("given", "sampled"):
        run = parallel_sort(records, SortSetup(processes=4, quantiles=how,
                                               sort_space_bytes=4 * 3 * 4 * KB))
        assert sorted(len(p) for p in run.partitions) == [0, 0, 0, 500]
        assert run.buffer.balanced()


def test_the_ray_runtime_counts_what_threads_count(ray_session):
    """One shared-memory machine in one Ray worker: the same output and the same counts."""
    records = sort_records(6000, seed=8)
    setup = SortSetup(processes=3, cluster_bytes=8 * KB, unfix="macro_4", pools=2)
    local, remote = parallel_sort(records, setup), parallel_sort(records, setup, runtime="ray")
    assert np.array_equal(local.output(), remote.output())
    assert remote.buffer.counters.calls == local.buffer.counters.calls
    assert [w.runs for w in remote.work] == [w.runs for w in local.work]
    assert remote.buffer.balanced() and len(remote.buffer.locks) == 2


def test_runtimes_are_checked():
    with pytest.raises(MinidbError, match="runtime is threads, inline, ray"):
        parallel_sort(sort_records(10), SortSetup(processes=1), runtime="fork")


def test_a_failing_consumer_does_not_leave_its_producers_waiting(monkeypatch):
    """Consumer 0 dies at once while its inbox holds one message at most: the producers that
    wait for room there must stop with the error, not wait out the exchange's timeout."""
    import time as clock

    from minidb.volcano import psort

    real_sort = psort._sort

    def sort_or_die(c, run, exchange):
        if c == 0:
            raise RuntimeError("consumer 0 crashed")
        real_sort(c, run, exchange)

    monkeypatch.setattr(psort, "_sort", sort_or_die)
    start = clock.monotonic()
    with pytest.raises(MinidbError, match="consumer 0 crashed"):
        parallel_sort(sort_records(40_000, seed=2),
                      SortSetup(processes=3, flow_control=1, sort_space_bytes=3 * 12 * 4 * KB))
    assert clock.monotonic() - start < 60
