"""Compare runs: two stored runs side by side, row by row, with their differences highlighted
(another scale, profile or node count, or a student's plug-in against the built-in one)."""

import explorer
import explorer_ui as ui
import streamlit as st

ui.page("Compare runs",
        "Two stored runs side by side: rows paired on row, column, metric and clock.")
store = ui.open_store(ui.store_path())

runs = store.runs(status="ok")[::-1]  # newest first
if len(runs) < 2:
    st.info("Comparing needs two finished runs in the store; make another on the Run page.")
    st.stop()
by_id = {r["run_id"]: r for r in runs}
ids = list(by_id)
first_a, first_b = explorer.default_pair(runs)
pick_a, pick_b = st.columns(2)
a = pick_a.selectbox("Run A", ids, index=first_a, format_func=lambda i: explorer.run_label(by_id[i]),
                     key="cmp_a")
b = pick_b.selectbox("Run B", ids, index=first_b, format_func=lambda i: explorer.run_label(by_id[i]),
                     key="cmp_b")
run_a, run_b = by_id[a], by_id[b]
if a == b:
    st.warning("Run A and run B are the same run: choose two different runs.")
elif run_a["experiment"] != run_b["experiment"]:
    st.warning(f"The runs are of different experiments ({run_a['experiment']} and "
               f"{run_b['experiment']}): few rows will pair up.")

st.subheader("Parameters")
params = explorer.parameter_diff(run_a, run_b)
st.dataframe(params.style.apply(
    lambda line: [explorer.CHANGED if line["differs"] else ""] * len(line), axis=1),
    hide_index=True)

st.subheader("Rows")
rows_a, rows_b = store.rows(run_id=a), store.rows(run_id=b)
pick_clock, pick_threshold, pick_options = st.columns(3)
clock = pick_clock.selectbox("Clock", ["modeled", "wall", "both"], key="cmp_clock")
threshold = pick_threshold.number_input("Highlight when B / A is off 1 by more than (%)",
                                        min_value=0.0, value=10.0, step=5.0,
                                        key="cmp_threshold") / 100
only_changed = pick_options.checkbox("Only highlighted rows", key="cmp_only_changed")
match_reference = pick_options.checkbox(
    "Pair on the reference too", key="cmp_match_reference",
    help="Rows of a run at the paper's configuration name a table or figure; the same rows of a "
         "smaller run name none. Tick this to pair only rows that name the same one.")
keys = ("reference", *explorer.JOIN_KEYS) if match_reference else explorer.JOIN_KEYS
frame = explorer.compare_runs(rows_a, rows_b, keys)
metrics = sorted(frame["metric"].unique())
chosen = st.multiselect("Metrics", metrics, default=metrics, key=f"cmp_metrics_{a}_{b}")
frame = frame[frame["metric"].isin(chosen)]
if clock != "both":
    frame = frame[frame["clock"] == clock]
flags = explorer.changed(frame, threshold)
st.markdown(f"{int((frame['A'].notna() & frame['B'].notna()).sum())} rows in both runs, "
            f"{int(frame['B'].isna().sum())} only in A, {int(frame['A'].isna().sum())} only in "
            f"B; **{int(flags.sum())} highlighted**.")
if only_changed:
    frame = frame[flags]
frame = frame.reset_index(drop=True)
st.dataframe(explorer.style_comparison(frame, threshold), hide_index=True)
