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
by_experiment: dict[str, list[dict]] = {}
for r in runs:
    by_experiment.setdefault(r["experiment"], []).append(r)
names = list(by_experiment)
first = explorer.default_experiment(runs)
pick_experiment, pick_all = st.columns([2, 1])
experiment = pick_experiment.selectbox(
    "Experiment", names, index=names.index(first),
    format_func=lambda n: f"{n} ({len(by_experiment[n])} run"
                          f"{'s' if len(by_experiment[n]) > 1 else ''})",
    key="cmp_experiment", help="Runs A and B start as the two latest runs of this experiment.")
any_run = pick_all.checkbox("Let A and B be runs of any experiment", key="cmp_any")
if len(by_experiment[experiment]) < 2 and not any_run:
    alone = "" if any(len(v) > 1 for v in by_experiment.values()) else (
        ", and no experiment of this store has two")
    st.info(f"{experiment} has one finished run{alone}. Run it again on the Run page (another "
            f"scale, profile or partitioner) to compare two runs of it, or tick 'Let A and B be "
            f"runs of any experiment'.")
    st.stop()
shown = runs if any_run else by_experiment[experiment]
by_id = {r["run_id"]: r for r in shown}
ids = list(by_id)
first_a, first_b = explorer.default_pair(shown)
pick_a, pick_b = st.columns(2)
a = pick_a.selectbox("Run A", ids, index=first_a, format_func=lambda i: explorer.run_label(by_id[i]),
                     key=f"cmp_a_{experiment}_{any_run}")
b = pick_b.selectbox("Run B", ids, index=first_b, format_func=lambda i: explorer.run_label(by_id[i]),
                     key=f"cmp_b_{experiment}_{any_run}")
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

rows_a, rows_b = store.rows(run_id=a), store.rows(run_id=b)
st.subheader("Curves")
pick_curve_clock, pick_curve_metric = st.columns([1, 2])
curve_clock = pick_curve_clock.radio("Clock", ["modeled", "wall"], horizontal=True,
                                     key="cmp_curve_clock")
curve_metrics = [m for m in explorer.metrics_of(rows_a + rows_b, curve_clock)]
if curve_metrics:
    curve_metric = pick_curve_metric.selectbox(
        "Metric", curve_metrics,
        index=curve_metrics.index("response_time") if "response_time" in curve_metrics else 0,
        key=f"cmp_curve_metric_{curve_clock}")
    curves = explorer.comparison_curves(rows_a, rows_b, curve_metric, curve_clock)
    left_out = len(curves) - len(explorer.finite_points(curves))
    if curves.empty:
        st.write("These runs have no rows along an axis (node counts, page sizes, sizes): see "
                 "the table below.")
    elif left_out == len(curves):
        st.write(f"Every {curve_metric} of these runs along an axis is NaN or infinite: nothing "
                 f"to draw; see the table below.")
    else:
        st.altair_chart(explorer.comparison_chart(curves, curve_metric,
                                                  str(curves["unit"].iloc[0])), width="content")
        st.caption("solid: run A; dashed: run B; one colour per query"
                   + (f"; {left_out} NaN or infinite value(s) not drawn (see the table below)"
                      if left_out else "") + ".")
else:
    st.write(f"Neither run has numbers on the {curve_clock} clock.")

st.subheader("Rows")
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
st.markdown(f"{int((frame['in'] == 'both').sum())} rows in both runs, "
            f"{int((frame['in'] == 'A only').sum())} only in A, "
            f"{int((frame['in'] == 'B only').sum())} only in B; "
            f"**{int(flags.sum())} highlighted**.")
if only_changed:
    frame = frame[flags]
frame = frame.reset_index(drop=True)
st.dataframe(explorer.style_comparison(frame, threshold), hide_index=True)
