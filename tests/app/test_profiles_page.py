"""The hardware profiles page (app/pages/9_Hardware_profiles.py), driven by Streamlit's AppTest:
it shows a profile's constants with the kind of their sources, the cells a profile was
calibrated on, and filters by kind. The page needs no results store."""

from __future__ import annotations

from app_test import open_app
from streamlit.testing.v1 import AppTest

from minidb.cost import get_profile

PAGE = "pages/9_Hardware_profiles.py"


def open_page() -> AppTest:
    return open_app(PAGE, timeout=60)


def test_the_page_shows_gammas_constants_and_their_calibrations():
    at = open_page()
    metrics = {m.label: int(m.value) for m in at.metric}
    gamma = get_profile("gamma")
    assert metrics["calibrated"] == 2  # instr_scan (Table 7), hash_entry_bytes (§6.1)
    assert sum(metrics.values()) == len(gamma.provenance())
    (frame,) = at.dataframe
    shown = frame.value
    assert "not modeled" not in set(shown["kind"])  # hidden by default
    row = shown[shown["constant"] == "net_cpu_share"].iloc[0]
    assert row["kind"] == "estimate" and "Unibus" in row["source"]
    assert any("Table 7" in m.value for m in at.markdown)


def test_choosing_a_profile_and_a_kind_filters_the_table():
    at = open_page()
    at.selectbox(key="profile_name").select("vax780_ethernet").run()
    at.multiselect(key="profile_kinds").set_value(["calibrated"]).run()
    assert not at.exception, at.exception
    (frame,) = at.dataframe
    calibrated = [r["constant"] for r in get_profile("vax780_ethernet").provenance()
                  if r["kind"] == "calibrated"]
    assert sorted(frame.value["constant"]) == sorted(calibrated) and calibrated
