"""Tests for minidb.cost: hardware profiles and the modeled-time formula.

These check provenance and the properties of the formula, plus two hardware facts stated in the
papers. No test compares against a response time from a paper's tables, and no constant is tuned
to one.
"""

from __future__ import annotations

import math

import pytest

from minidb.cost import (
    DEFAULT_OVERLAP,
    NUMERIC_FIELDS,
    OPERATOR_COST_FIELD,
    PROFILES,
    HardwareProfile,
    UnknownOperatorKindError,
    WorkCounters,
    get_profile,
    modeled_time,
    register_operator_kind,
)
from minidb.errors import UnknownPluginError
from minidb.plugins import lookup

EXPECTED = {
    "gamma",
    "teradata",
    "tandem_vlx",
    "tandem_clx",
    "sequent",
    "sgi_o2",
    "vax780_ethernet",
    "vax750_ethernet",
    "this_machine",
}
PAGE = 4096


# --- profiles -------------------------------------------------------------------------------


def test_all_profiles_registered_by_name_and_as_plugins():
    assert set(PROFILES) == EXPECTED
    for name, profile in PROFILES.items():
        assert profile.name == name
        assert get_profile(name) is profile
        assert lookup("hardware_profile", name) is profile


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_numeric_field_has_a_source(name):
    profile = PROFILES[name]
    for f in NUMERIC_FIELDS:
        value = getattr(profile, f)
        assert value is None or isinstance(value, int | float), f
        assert profile.sources.get(f, "").strip(), f"{name}.{f} has no source"
    assert set(profile.sources) == set(NUMERIC_FIELDS)
    assert isinstance(profile.calibrated_on, tuple)


def test_calibrated_constants_name_real_cells_and_follow_their_derivation():
    from minidb.cost.profiles import gamma_hash_entry_bytes, gamma_scan_path_length
    from minidb.results import load_reference

    reference = load_reference().to_pylist()
    cells = {(c["paper"], c["reference"], c["row"], c["column"]): c["value"] for c in reference}
    gamma = PROFILES["gamma"]
    assert gamma.calibration_cells == (("gamma", "Table 7", "min_scalar", "gamma_1000000"),
                                       ("gamma", "§6.1", "joins_1000000", "gamma_per_processor"))
    published = cells[gamma.calibration_cells[0]]
    assert gamma.instr_scan == round(gamma_scan_path_length(published))
    assert gamma.sources["instr_scan"].startswith("calibrated")
    overflows = cells[gamma.calibration_cells[1]]  # §6.1's six overflow resolutions
    assert gamma.hash_entry_bytes == gamma_hash_entry_bytes(int(overflows))
    assert gamma.sources["hash_entry_bytes"].startswith("calibrated")
    for profile in PROFILES.values():
        for cell in profile.calibration_cells:
            assert cell in cells, (profile.name, cell)
        if profile.calibration_cells:
            assert profile.calibrated_on  # the text says what was taken from the cell
    # a slower published aggregate means a longer path length, in proportion
    assert gamma_scan_path_length(2 * published) > 2 * gamma_scan_path_length(published)


def test_a_profile_without_sources_is_refused():
    gamma = PROFILES["gamma"]
    sources = dict(gamma.sources)
    del sources["mips"]
    with pytest.raises(ValueError, match="mips"):
        HardwareProfile(**{**gamma.__dict__, "name": "bad", "sources": sources})


def test_what_if_copy_records_its_source():
    fast = PROFILES["gamma"].replace(net_mbit_s=40.0)
    assert fast.net_mbit_s == 40.0
    assert fast.sources["net_mbit_s"].startswith("what-if")
    assert PROFILES["gamma"].net_mbit_s == 4.0


def test_gamma_32k_page_transfer_is_about_13_ms():
    """Gamma paper, Section 5.2.2: on Gamma's drive a 32 Kbyte page takes 13 ms to transfer.

    This checks the profile's transfer-rate constant (derived from the 40 KB track size and the
    rotation speed, not from this sentence) against a stated hardware fact; it is not a query
    response time.
    """
    ms = PROFILES["gamma"].page_transfer_s(32 * 1024) * 1e3
    assert 13 * 0.7 <= ms <= 13 * 1.3


def test_vax750_is_0_629_of_vax780():
    """Distributed INGRES paper, Section 3: an 11/750 is about 0.629 times as fast as an 11/780."""
    ratio = PROFILES["vax750_ethernet"].mips / PROFILES["vax780_ethernet"].mips
    assert ratio == pytest.approx(0.629)


def test_gamma_network_is_the_unibus_path_not_the_ring():
    gamma = PROFILES["gamma"]
    assert gamma.net_mbit_s == 4.0
    assert gamma.interconnect_mbit_s == 80.0
    assert gamma.packet_bytes == 2048


def test_unknown_profile_is_a_one_line_error_listing_the_names():
    with pytest.raises(UnknownPluginError) as info:
        get_profile("cray")
    message = str(info.value)
    assert "\n" not in message
    assert "cray" in message
    for name in EXPECTED:
        assert name in message


def test_constructing_profiles_measures_nothing():
    # this_machine is documented round numbers: the same on every machine.
    here = PROFILES["this_machine"]
    assert here.mips == 10_000.0
    assert here.net_mbit_s == 10_000.0


# --- formula --------------------------------------------------------------------------------


def scan_node(pages: int, tuples_per_page: int = 19) -> WorkCounters:
    w = WorkCounters(pages_read_seq=pages, buffer_calls=pages, operators_started=1)
    w.add_tuples("heap_scan", pages * tuples_per_page)
    return w


def test_zero_work_costs_only_startup():
    gamma = PROFILES["gamma"]
    result = modeled_time([{0: WorkCounters(operators_started=2)}], gamma, PAGE)
    node = result.phases[0].nodes[0]
    assert node.cpu_s == node.disk_s == node.net_s == 0.0
    assert node.bottleneck == "startup"
    assert result.total_s == pytest.approx(2 * gamma.operator_startup_ms / 1e3)
    assert modeled_time([{0: WorkCounters()}], gamma, PAGE).total_s == 0.0


def test_doubling_pages_of_a_disk_bound_node_doubles_its_disk_time():
    # Random reads with little CPU work: disk bound on every profile.
    for profile in PROFILES.values():
        one = modeled_time([{0: WorkCounters(pages_read_random=100)}], profile, PAGE)
        two = modeled_time([{0: WorkCounters(pages_read_random=200)}], profile, PAGE)
        n1, n2 = one.phases[0].nodes[0], two.phases[0].nodes[0]
        assert n1.bottleneck == "disk", profile.name
        assert n2.disk_s == pytest.approx(2 * n1.disk_s)
        assert n2.total_s == pytest.approx(2 * n1.total_s)


def test_random_page_costs_seek_rotation_and_transfer():
    gamma = PROFILES["gamma"]
    node = modeled_time([{0: WorkCounters(pages_read_random=1)}], gamma, PAGE).phases[0].nodes[0]
    expected = (gamma.disk_seek_ms + gamma.disk_rotation_ms) / 1e3 + PAGE / (
        gamma.disk_transfer_mb_s * 1e6
    )
    assert node.disk_s == pytest.approx(expected)
    seq = modeled_time([{0: WorkCounters(pages_read_seq=1)}], gamma, PAGE).phases[0].nodes[0]
    gap = gamma.disk_seq_gap_ms / 1e3  # the revolution lost before each page of a scan
    assert seq.disk_s == pytest.approx(gap + PAGE / (gamma.disk_transfer_mb_s * 1e6))
    assert gap > 0 and get_profile('tandem_vlx').disk_seq_gap_ms == 0  # Tandem reads ahead


def test_the_slowest_node_defines_the_phase():
    phase = {0: scan_node(100), 1: scan_node(300), 2: scan_node(200)}
    result = modeled_time([phase], "gamma", PAGE)
    p = result.phases[0]
    assert p.slowest_node == 1
    assert p.total_s == pytest.approx(p.nodes[1].total_s)
    assert p.total_s == pytest.approx(max(n.total_s for n in p.nodes.values()))


def test_phases_add_up():
    a = {0: scan_node(100)}
    b = {0: scan_node(50)}
    both = modeled_time([a, b], "gamma", PAGE)
    assert both.total_s == pytest.approx(
        modeled_time([a], "gamma", PAGE).total_s + modeled_time([b], "gamma", PAGE).total_s
    )


def test_short_circuited_packets_are_cheaper_than_remote_ones():
    gamma = PROFILES["gamma"]
    size = gamma.packet_bytes

    def sender(remote: int, local: int) -> WorkCounters:
        return WorkCounters(
            packets_sent_remote=remote,
            bytes_sent_remote=remote * size,
            packets_short_circuited=local,
            bytes_short_circuited=local * size,
        )

    mostly_remote = modeled_time([{0: sender(90, 10)}], gamma, PAGE).phases[0].nodes[0]
    mostly_local = modeled_time([{0: sender(10, 90)}], gamma, PAGE).phases[0].nodes[0]
    assert mostly_local.net_s < mostly_remote.net_s
    assert mostly_local.cpu_s < mostly_remote.cpu_s
    assert mostly_local.total_s < mostly_remote.total_s
    all_local = modeled_time([{0: sender(0, 100)}], gamma, PAGE).phases[0].nodes[0]
    assert all_local.net_s == 0.0
    assert all_local.cpu_s > 0.0  # the memory copy


def test_overlap_one_is_the_max_and_zero_is_the_sum():
    w = scan_node(200)
    w.packets_sent_remote = 40
    w.bytes_sent_remote = 40 * 2048
    w.packets_received = 40
    w.operators_started = 0
    own_interface = get_profile("gamma").replace(net_cpu_share=0.0)
    full = modeled_time([{0: w}], own_interface, PAGE, overlap=1.0).phases[0].nodes[0]
    none = modeled_time([{0: w}], own_interface, PAGE, overlap=0.0).phases[0].nodes[0]
    half = modeled_time([{0: w}], own_interface, PAGE, overlap=0.5).phases[0].nodes[0]
    parts = (full.cpu_s, full.disk_s, full.net_s)
    assert all(x > 0 for x in parts)
    assert full.total_s == pytest.approx(max(parts))
    assert none.total_s == pytest.approx(sum(parts))
    assert full.total_s < half.total_s < none.total_s
    assert DEFAULT_OVERLAP == 1.0


def test_a_cpu_that_moves_its_packets_pays_the_interface_time():
    """Gamma's VAX carries each packet over its Unibus (net_cpu_share = 1, Gamma §5.2.1, §9):
    the interface's time is added to the CPU's instead of overlapping it, and counted once."""
    w = scan_node(200)
    w.packets_sent_remote = 40
    w.bytes_sent_remote = 40 * 2048
    gamma = get_profile("gamma")
    assert gamma.net_cpu_share == 1.0
    alone = modeled_time([{0: w}], gamma.replace(net_cpu_share=0.0), PAGE).phases[0].nodes[0]
    on_cpu = modeled_time([{0: w}], gamma, PAGE).phases[0].nodes[0]
    assert alone.net_s > 0 and on_cpu.net_s == pytest.approx(alone.net_s)
    assert on_cpu.cpu_s == pytest.approx(alone.cpu_s + alone.net_s)
    assert on_cpu.busy_s == pytest.approx(max(on_cpu.cpu_s, on_cpu.disk_s))
    assert on_cpu.total_s > alone.total_s
    none = modeled_time([{0: w}], gamma, PAGE, overlap=0.0).phases[0].nodes[0]
    assert none.busy_s == pytest.approx(alone.cpu_s + alone.disk_s + alone.net_s)
    with pytest.raises(ValueError, match="net_cpu_share"):
        gamma.replace(net_cpu_share=1.5)


def test_overlap_out_of_range_is_refused():
    with pytest.raises(ValueError):
        modeled_time([{0: scan_node(1)}], "gamma", PAGE, overlap=1.5)


def test_cpu_time_scales_with_mips():
    w = WorkCounters(tuples={"hash_build": 10_000, "hash_probe": 20_000})
    t780 = modeled_time([{0: w}], "vax780_ethernet", PAGE).phases[0].nodes[0]
    t750 = modeled_time([{0: w}], "vax750_ethernet", PAGE).phases[0].nodes[0]
    assert t780.cpu_s / t750.cpu_s == pytest.approx(0.629)
    gamma = PROFILES["gamma"]
    expected = 30_000 * gamma.instr_hash / (gamma.mips * 1e6)
    assert modeled_time([{0: w}], gamma, PAGE).phases[0].nodes[0].cpu_s == pytest.approx(expected)


def test_shared_interconnect_bounds_a_phase():
    # Ten Ethernet senders each within their own interface time, but all on one 3 Mbit/s wire.
    ingres = PROFILES["vax780_ethernet"]
    w = WorkCounters(packets_sent_remote=100, bytes_sent_remote=100 * 512)
    result = modeled_time([{i: w for i in range(10)}], ingres, PAGE)
    p = result.phases[0]
    assert p.bottleneck == "interconnect"
    assert p.total_s == pytest.approx(10 * 100 * 512 * 8 / 3e6)
    # A switched network has no such bound.
    o2 = modeled_time([{i: w for i in range(10)}], "sgi_o2", PAGE).phases[0]
    assert o2.interconnect_s == 0.0


def test_serial_startup_grows_with_nodes():
    one = modeled_time([{0: WorkCounters(operators_started=2)}], "gamma", PAGE, startup="serial")
    eight = modeled_time(
        [{i: WorkCounters(operators_started=2) for i in range(8)}], "gamma", PAGE, startup="serial"
    )
    per_node = modeled_time(
        [{i: WorkCounters(operators_started=2) for i in range(8)}], "gamma", PAGE
    )
    assert eight.total_s == pytest.approx(8 * one.total_s)
    assert per_node.total_s == pytest.approx(one.total_s)


def test_coordinator_messages_add_to_the_total():
    gamma = PROFILES["gamma"]
    base = modeled_time([{0: scan_node(10)}], gamma, PAGE)
    more = modeled_time([{0: scan_node(10)}], gamma, PAGE, coordinator_messages=3)
    assert more.total_s - base.total_s == pytest.approx(3 * gamma.control_message_ms / 1e3)


def test_counters_add():
    a = WorkCounters(pages_read_seq=3, tuples={"filter": 5}, packets_sent_remote=1)
    b = WorkCounters(pages_read_seq=2, tuples={"filter": 1, "store": 4}, control_messages=2)
    c = a + b
    assert c.pages_read_seq == 5
    assert c.tuples == {"filter": 6, "store": 4}
    assert c.packets_sent_remote == 1 and c.control_messages == 2
    assert a.tuples == {"filter": 5}  # operands unchanged
    assert sum([a, b]) == c


def test_unknown_operator_kind_is_a_one_line_error():
    w = WorkCounters(tuples={"teleport": 1})
    with pytest.raises(UnknownOperatorKindError) as info:
        modeled_time([{0: w}], "gamma", PAGE)
    assert "\n" not in str(info.value) and "heap_scan" in str(info.value)
    register_operator_kind("teleport", "instr_copy")
    try:
        assert modeled_time([{0: w}], "gamma", PAGE).total_s > 0
    finally:
        OPERATOR_COST_FIELD.pop("teleport")
    with pytest.raises(ValueError):
        register_operator_kind("teleport", "instr_magic")


def test_breakdown_rows_and_explain():
    result = modeled_time(
        [{0: scan_node(100), 1: scan_node(50)}, {0: scan_node(10)}],
        "gamma",
        PAGE,
        phase_names=["select", "store"],
    )
    rows = result.rows()
    assert len(rows) == 3
    assert {r["bottleneck"] for r in rows} <= {"cpu", "disk", "net", "startup", "idle"}
    assert sum(r["slowest"] for r in rows) == 2
    text = result.explain()
    assert "gamma" in text and "select" in text and "node 0" in text
    assert math.isclose(result.total_s, sum(p.total_s for p in result.phases))


def test_every_constant_says_what_kind_of_source_it_has():
    """``provenance`` (what ``minidb profile`` prints) sorts each source into one kind; a profile
    with a calibrated constant names the published cells it was calibrated on."""
    from minidb.cost import PROFILES, SOURCE_KINDS, source_kind

    assert source_kind("calibrated: Table 7 ...") == "calibrated"
    assert source_kind("Gamma paper §2.1: 80 Mbit/s token ring") == "stated"
    assert source_kind("not modeled: 0, ...") == "not modeled"
    for profile in PROFILES.values():
        rows = profile.provenance()
        assert [r["constant"] for r in rows] == list(NUMERIC_FIELDS)
        assert {r["kind"] for r in rows} <= set(SOURCE_KINDS)
        if any(r["kind"] == "calibrated" for r in rows):
            assert profile.calibrated_on, profile.name
    what_if = get_profile("gamma").replace(mips=6.0).provenance()
    assert next(r for r in what_if if r["constant"] == "mips")["kind"] == "what-if"
