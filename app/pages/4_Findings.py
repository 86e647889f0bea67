"""Findings: each paper's headline claims (``minidb.experiments.findings``), checked on the latest
stored rows, as pass / fail / not checked with what was measured."""

import explorer
import explorer_ui as ui
import streamlit as st

from minidb.experiments.reproduce import build_report

ui.page("Findings",
        "What each paper concludes from its numbers, checked on the latest stored runs. A check "
        "compares rows with each other (never with the published values), at any scale.")
store = ui.open_store(ui.store_path())

reports = build_report(store, runs="latest")  # the explorer shows exploratory runs too
if not reports:
    st.info("No paper has stored runs yet: reproduce one on Home or run an experiment.")
    st.stop()

papers = [r.paper for r in reports]
pick_paper, pick_status = st.columns([1, 2])
paper = pick_paper.selectbox("Paper", ["all", *papers], key="findings_paper")
statuses = pick_status.multiselect("Show", list(explorer.STATUS_MARK),
                                   default=list(explorer.STATUS_MARK), key="findings_status")
COLORS = {"pass": "green", "fail": "red", "not checked": "gray"}

for report in reports:
    if paper not in ("all", report.paper):
        continue
    st.header(f"{report.paper}: {report.title}")
    counts = explorer.findings_counts(report)
    for where, status in zip(st.columns(3), ("pass", "fail", "not checked"), strict=True):
        where.metric(status, counts[status])
    st.caption(report.summary())
    shown = [f for f in report.findings if f.status in statuses]
    if not shown:
        st.write("No finding with the chosen status.")
    for f in shown:
        with st.container(border=True):
            st.markdown(f":{COLORS[f.status]}[**{explorer.STATUS_MARK[f.status]}**] "
                        f"**{f.name}** · {f.source}")
            st.markdown(f.claim)
            st.caption(f"measured: {f.detail}")
