"""Joins: the join plug-ins side by side as memory shrinks (Gamma §6.2.2's experiment on one node):
what each algorithm writes and reads to stay within its budget, and its overflow counts. The
logic is ``explorer.join_memory_frame``; the algorithms are ``minidb/exec/join/``."""

import explorer
import explorer_ui as ui
import streamlit as st

ui.page("Joins: memory and overflow",
        "joinABprime on one node: A joined with Bprime, a tenth of A's size, with every join "
        "algorithm given the same number of memory pages (Gamma paper, Section 6.2.2; Lab 2).")

setup = st.columns(2)
rows = setup[0].select_slider("Tuples in A", [2_000, 5_000, 10_000, 20_000], 10_000,
                              key="joins_rows")
share = setup[1].slider("Memory, % of the pages Bprime fills", 10, 150, 100, step=5,
                        key="joins_share")
build = explorer.join_build_pages(int(rows))
st.caption(f"Bprime fills {build} pages of 4 KB; at {share}% each join gets "
           f"{max(int(build * share / 100), 3)} pages (or more where an algorithm needs more).")


@st.cache_data(show_spinner="Running the joins...")
def measured(share: int, rows: int):
    return explorer.join_memory_frame(share, rows)


frame = measured(int(share), int(rows))
if not frame["same rows"].all():
    st.error("The algorithms returned different rows: " + ", ".join(
        frame.loc[~frame["same rows"], "algorithm"]))
numbers = st.columns(len(frame))
for column, (_, r) in zip(numbers, frame.iterrows(), strict=True):
    column.metric(r["algorithm"], f"{int(r['pages written + read']):,} pages")
st.altair_chart(explorer.join_memory_chart(frame))
st.dataframe(frame, hide_index=True)
st.caption("Simple hash stays flat while Bprime fits and then pays for every overflow "
           "resolution; Hybrid keeps partition 0 in memory and degrades gracefully; GRACE "
           "always writes both relations once. Predict before you move the slider.")
