"""The commit protocols page (app/pages/8_Commit_protocols.py), driven by Streamlit's AppTest:
it opens on a fault-free 2PC commit, runs every built-in protocol, and shows the lesson it is
for: a coordinator that dies after its decision leaves 2PC's participants blocked, not 3PC's.
The page needs no results store."""

from __future__ import annotations

import pyarrow as pa
import pytest
from app_test import open_app
from streamlit.testing.v1 import AppTest

PAGE = "pages/8_Commit_protocols.py"
BUILT_IN = ["2pc", "presumed_abort", "presumed_commit", "3pc", "group_commit"]


def open_page() -> AppTest:
    return open_app(PAGE, timeout=60)


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def diagram(at: AppTest) -> dict[str, pa.Table]:
    """The sequence diagram's data sets by their columns: messages, marks, times, lifelines."""
    (chart,) = at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart")
    tables = [pa.ipc.open_stream(d.data.data).read_all() for d in chart.proto.datasets]
    named = {}
    for t in tables:
        columns = set(t.column_names)
        name = ("messages" if "fate" in columns else "marks" if "mark" in columns
                else "lines" if "up" in columns else "times")
        named[name] = t
    return named


def crash_coordinator(at: AppTest, protocol: str) -> AppTest:
    at.selectbox(key="commit_protocol").set_value(protocol)
    at.selectbox(key="commit_crash").set_value("coordinator")
    return rerun(at)


@pytest.fixture(autouse=True)
def no_store(tmp_path, monkeypatch):
    """The page reads no store; the sidebar of Home still names one (which must not appear)."""
    missing = tmp_path / "nothing" / "results.duckdb"
    monkeypatch.setenv("MINIDB_RESULTS", str(missing))
    yield
    assert not missing.exists()


def test_the_page_opens_on_a_fault_free_2pc_commit():
    at = open_page()
    assert at.title[0].value.startswith("Commit protocols")
    assert at.selectbox(key="commit_protocol").value == "2pc"
    assert at.selectbox(key="commit_crash").value == "none"
    assert metrics(at) == {"client told": "COMMIT", "participants in doubt": "0",
                           "promises broken": "0", "messages": "12", "log forces": "7"}
    assert not at.error and "No promise broken" in at.success[0].value
    drawn = diagram(at)
    messages = drawn["messages"].to_pydict()
    assert len(messages["kind"]) == 12 and set(messages["fate"]) == {"delivered"}
    assert all(y2 > y for y, y2 in zip(messages["y"], messages["y2"], strict=True))  # down
    marks = drawn["marks"].to_pydict()
    assert marks["label"].count("COMMIT") == 4  # every site decides
    assert marks["mark"].count("forced log write") == 7
    sites = at.dataframe[0].value
    assert sites["site"].tolist() == ["coordinator", "P1", "P2", "P3"]
    assert set(sites["outcome"]) == {"commit"} and sites["log forces"].sum() == 7
    assert sites["messages sent"].sum() == 12
    table = at.dataframe[1].value.set_index("protocol")
    assert set(BUILT_IN) <= set(table.index)
    assert table["promises broken"].eq(0).all()
    assert table.loc["2pc", "commit: messages"] == 12
    assert table.loc["presumed_abort", "abort: forces"] < table.loc["2pc", "abort: forces"]
    assert table.loc["3pc", "coordinator gone, someone blocked"] == 0
    assert table.loc["2pc", "coordinator gone, someone blocked"] > 0


@pytest.mark.parametrize("protocol", BUILT_IN)
def test_every_built_in_protocol_commits_on_the_page(protocol):
    at = open_page()
    at.selectbox(key="commit_protocol").set_value(protocol)
    rerun(at)
    assert metrics(at)["client told"] == "COMMIT"
    assert metrics(at)["promises broken"] == "0" and not at.error
    assert diagram(at)["marks"].to_pydict()["label"].count("COMMIT") == 4
    at.checkbox(key="commit_no_vote").check()
    rerun(at)
    assert metrics(at)["client told"] == "ABORT"
    assert metrics(at)["promises broken"] == "0"


def test_a_dead_coordinator_blocks_2pc_but_not_3pc():
    at = crash_coordinator(open_page(), "2pc")
    step = at.selectbox(key="commit_step_2pc_3_0_False")
    assert "after its decision" in step.format_func(step.value)  # the crash the page opens on
    assert metrics(at)["client told"] == "COMMIT" and metrics(at)["participants in doubt"] == "3"
    assert "Blocked: P1, P2, P3" in at.warning[0].value
    assert metrics(at)["promises broken"] == "0"
    assert "CRASH" in " ".join(diagram(at)["marks"].to_pydict()["label"])
    assert at.dataframe[0].value["in doubt"].tolist() == ["", "yes", "yes", "yes"]

    crash_coordinator(at, "3pc")
    assert metrics(at)["participants in doubt"] == "0"
    assert not at.warning
    assert any("no participant is left in doubt" in s.value for s in at.success)
    assert set(at.dataframe[0].value["outcome"][1:]) == {"commit"}  # the survivors finished

    # the coordinator comes back: 2PC ends too, from its forced COMMIT record
    at.selectbox(key="commit_protocol").set_value("2pc")
    at.checkbox(key="commit_restart").check()
    rerun(at)
    assert metrics(at)["participants in doubt"] == "0"
    assert "restart" in diagram(at)["marks"].to_pydict()["label"]


def test_lost_messages_a_partition_and_a_participant_crash():
    at = open_page()
    at.selectbox(key="commit_crash").set_value("participant 2")
    at.slider(key="commit_drop").set_value(0.3)
    at.slider(key="commit_duplicate").set_value(0.2)
    at.number_input(key="commit_seed").set_value(3)
    rerun(at)
    at.checkbox(key="commit_restart").check()
    at.checkbox(key="commit_partition").check()
    rerun(at)
    assert metrics(at)["promises broken"] == "0" and not at.error
    fates = set(diagram(at)["messages"].to_pydict()["fate"])
    assert "delivered" in fates and any(f.startswith("lost") for f in fates)
    lines = diagram(at)["lines"].to_pydict()
    assert "down" in lines["up"]  # P2's lifeline while it was down
    # a partition with both sides on one side is refused in one line, not applied
    at.multiselect(key="commit_partition_side_3").set_value([0, 1, 2, 3])
    rerun(at)
    assert "A partition needs" in at.warning[0].value


def test_fewer_events_drawn():
    at = crash_coordinator(open_page(), "2pc")
    assert at.slider(key="commit_events").value == 120  # a blocked run goes on and on
    at.slider(key="commit_events").set_value(10)
    rerun(at)
    drawn = diagram(at)
    assert max(drawn["marks"].to_pydict()["y"] + drawn["messages"].to_pydict()["y2"]) < 10
    assert "later events" in " ".join(c.value for c in at.caption)


def test_a_read_only_participant_under_presumed_abort():
    """P2 changed nothing: under presumed abort it votes READ, logs nothing and leaves (R*); the
    commit costs 10 messages and 5 forces, and the cost table says so for every protocol."""
    at = open_page()
    at.selectbox(key="commit_protocol").set_value("presumed_abort")
    at.checkbox(key="commit_read_only").check()
    rerun(at)
    assert (metrics(at)["messages"], metrics(at)["log forces"]) == ("10", "5")
    sites = at.dataframe[0].value
    assert sites["vote"].tolist() == ["-", "yes", "read", "yes"]
    assert sites["outcome"].tolist() == ["commit", "commit", "-", "commit"]
    assert sites["log records"].tolist()[2] == 0 and metrics(at)["promises broken"] == "0"
    assert "read-only: leaves" in diagram(at)["marks"].to_pydict()["label"]
    table = at.dataframe[1].value.set_index("protocol")
    assert table.loc["presumed_abort", "commit, P1 read-only: messages"] == 10
    assert table.loc["2pc", "commit, P1 read-only: forces"] == 7
