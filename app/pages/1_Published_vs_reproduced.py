"""Published vs reproduced: one table or figure of a paper, the paper's numbers beside the latest
run's, cell by cell and as curves (response time or speedup against nodes or page size)."""

import explorer
import explorer_ui as ui
import streamlit as st

from minidb.experiments import PAPERS, experiments

ui.page("Published vs reproduced",
        "The latest stored run of an experiment beside the numbers the paper printed.")
store = ui.open_store(ui.store_path())

papers = explorer.papers_with_experiments()
finished = store.runs(status="ok")
stored = [p for p in papers if any(r["paper"] == p for r in finished)]
# a link may name the figure: ?experiment=gamma.page_size&reference=Figure 6 (lectures, tests)
wanted = explorer.linked_choice(st.query_params.get("experiment"),
                                st.query_params.get("reference"))
if wanted is not None:
    stored = [wanted[0].paper]
pick_paper, pick_experiment, pick_reference = st.columns(3)
paper = pick_paper.selectbox("Paper", papers, index=papers.index(stored[0]) if stored else 0,
                             format_func=lambda p: f"{p}: {PAPERS[p].split(':')[0]}",
                             key="pvr_paper")
exps = {e.name: e for e in experiments(paper)}
ran = [name for name in exps if any(r["experiment"] == name for r in finished)]
names = list(exps)
first = wanted[0].name if wanted and wanted[0].name in names else (ran[0] if ran else names[0])
name = pick_experiment.selectbox("Experiment", names, index=names.index(first),
                                 format_func=lambda n: f"{n}: {exps[n].title}",
                                 key=f"pvr_experiment_{paper}")
exp = exps[name]
references = list(exp.references)
reference = pick_reference.selectbox(
    "Table or figure", references,
    index=references.index(wanted[1]) if wanted and wanted[1] in references else 0,
    key=f"pvr_reference_{name}")

rows = explorer.experiment_rows(store, exp)
scale = explorer.run_scale(store, rows)
if rows:
    run_id = rows[0]["run_id"]
    st.caption(f"Latest run of {name}: {run_id}"
               + (f" at scale {scale:g}" if scale is not None else ""))
elif any(r["experiment"] == name for r in finished):
    empty_run = [r for r in finished if r["experiment"] == name][-1]["run_id"]
    st.warning(f"The latest run of {name} ({empty_run}) stored no rows: run it again on the "
               f"Run page. The paper's numbers are shown alone.")
else:
    st.warning(f"No stored run of {name} yet: run it on the Run page, or reproduce {paper} on "
               f"Home. The paper's numbers are shown alone.")

# -- the paper's cells ---------------------------------------------------------------------
st.subheader(f"{reference}: the paper's numbers")
cell_list = explorer.published_cells(store, paper, reference, exp)
cells = explorer.cells_frame(cell_list)
compared = cells[cells["within 2x"].notna()]  # calibration cells out; a stored NaN is off
within = int(compared["within 2x"].astype(bool).sum()) if len(compared) else 0
missing = int(explorer.not_reproduced(cells).sum())
if cells.empty:
    # said from the reference data: what the paper prints for this figure, if anything
    st.write(explorer.published_numbers_sentence(
        explorer.published_cells(store, paper, reference), reference))
else:
    st.write(explorer.published_numbers_sentence(cell_list, reference))
    st.markdown(f"**{within} of {len(compared)}** reproduced cells within a factor of 2 of the "
                f"paper; {missing} published cells not reproduced by the latest run. Cells off "
                f"by more than 2x are red, cells not reproduced are grey.")
    if rows and compared.empty and scale is not None and scale != 1.0:
        st.info(f"The latest run of {name} is at scale {scale:g}. Only a run of the paper's "
                f"configuration (scale 1.0) is compared with the paper's cells, like with like; "
                f"the curves and the table below still show what this run measured.")
    st.dataframe(explorer.style_cells(cells), hide_index=True)

# -- curves ----------------------------------------------------------------------------------
if rows:
    st.subheader("Curves")
    pick_clock, pick_metric = st.columns([1, 2])
    clock = pick_clock.radio("Clock", ["modeled", "wall"], horizontal=True, key="pvr_clock",
                             help="modeled: the paper's hardware; wall: this machine")
    metrics = explorer.metrics_of(rows, clock)
    if not metrics:
        st.write(f"The latest run has no numbers on the {clock} clock.")
        st.stop()
    default_metric = explorer.reference_metric(store, paper, reference, metrics)
    metric = pick_metric.selectbox(
        "Metric", metrics, index=metrics.index(default_metric) if default_metric else 0,
        key=f"pvr_metric_{name}_{reference}_{clock}")
    all_rows = list(dict.fromkeys(r["row"] for r in rows if r["metric"] == metric))
    chosen = st.multiselect("Queries", all_rows,
                            default=explorer.reference_rows(store, paper, reference, rows, metric),
                            key=f"pvr_rows_{name}_{reference}_{metric}_{clock}")
    curves = explorer.curve_frame(rows, metric, clock, chosen)
    bars = explorer.category_frame(rows, metric, clock, chosen) if curves.empty else None
    if curves.empty and (bars is None or bars.empty):
        st.write("Nothing to plot: choose at least one query.")
    elif curves.empty:  # columns that are not an axis: bars, the paper's cells as ticks
        published = explorer.category_published(store, paper, reference, bars, metric)
        if clock != "modeled" or compared.empty:
            published = published.iloc[0:0]  # like with like: cells the run was compared on
        st.altair_chart(explorer.category_chart(bars, published, metric,
                                                str(bars["unit"].iloc[0])), width="content")
        st.caption("one bar per row and column of the run"
                   + ("; black ticks: the paper's numbers" if not published.empty else "")
                   + ".")
    elif explorer.finite_points(curves).empty:
        st.write(f"Every {metric} of the chosen queries is NaN or infinite: nothing to draw; "
                 f"see the run's table below.")
    else:
        published = explorer.published_points(store, paper, curves, metric)
        if clock != "modeled":
            published = published.iloc[0:0]  # the paper's times are its hardware's, not ours
        ideal = explorer.ideal_line(curves, metric)
        unit = str(curves["unit"].iloc[0])
        st.altair_chart(explorer.curve_chart(curves, published, ideal, metric, unit),
                        width="content")
        notes = []
        left_out = len(curves) - len(explorer.finite_points(curves))
        if left_out:
            notes.append(f"{left_out} NaN or infinite value(s) of the run not drawn (see its "
                         f"table below)")
        if not published.empty:
            notes.append("black diamonds: the paper's numbers (its tables and the points its "
                         "text gives)")
            if scale is not None and scale != 1.0 and unit != "ratio" and compared.empty:
                notes.append(f"the paper measured the full relations; this run is at scale "
                             f"{scale:g}, so compare shapes, not heights")
        if not ideal.empty:
            notes.append("dashed: the ideal, linear speedup from the smallest configuration"
                         if metric == "speedup" else "dashed: the ideal, flat scaleup")
        elsewhere = sorted(set(cells["metric"]) - {metric})
        if clock == "modeled" and elsewhere:
            notes.append(f"the paper's numbers for {reference} are of {', '.join(elsewhere)}: "
                         f"choose that metric to see them as points")
        if notes:
            st.caption("; ".join(notes) + ".")

    st.subheader(f"The run's {metric} ({clock} clock)")
    table = explorer.pivot_frame(rows, metric, clock, chosen or None)
    st.dataframe(explorer.style_pivot(table))

notes = explorer.shape_notes(store, paper, reference)
if notes:
    with st.expander(f"What the paper says about {reference}", expanded=not rows):
        st.markdown("\n".join(f"- {note}" for note in notes))
