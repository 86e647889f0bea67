"""Volcano tuning: Graefe and Thakkar's tuning of a parallel sort on a shared-memory Sequent
(1992), one step at a time. Each step shows the modeled sort time per disk count beside the
paper's numbers, and the counters that explain it (unfix and cluster calls, pool-lock hold and
wait). The logic is ``explorer.volcano_*``; the experiments are ``minidb.experiments.volcano``."""

import explorer
import explorer_ui as ui
import streamlit as st

STEPS = explorer.VOLCANO_STEPS

ui.page("Volcano: tuning a parallel sort",
        "Sorting 100 MB on a 16-disk shared-memory machine went from over 5 minutes to under "
        "1.5 through a sequence of small changes (Graefe and Thakkar 1992). Step through them: "
        "predict each step's effect before you look.")
path = ui.store_path()
try:
    store = ui.guarded(explorer.open_store(path))
except explorer.MinidbError as err:
    st.error(str(err))
    st.stop()
stored = {s.experiment: store.runs(experiment=s.experiment, status="ok") if store else []
          for s in STEPS}


def small_run_button() -> None:
    """Run every step at ``explorer.VOLCANO_SMALL`` into the store, with a progress bar each."""
    if not st.button("Run the small sequence", key="volcano_small", type="primary"):
        return
    opened = ui.open_store(path, create=True)
    with ui.user_errors():
        done = explorer.run_volcano_small(opened,
                                          progress_for=lambda exp: ui.progress_bar(exp.name))
        for key in [k for k in st.session_state if str(k).startswith("volcano_run_")]:
            del st.session_state[key]  # show the new runs, not the ones chosen before
        st.session_state["volcano_done"] = (f"Stored {len(done)} runs: "
                                            + ", ".join(f"{name} ({rows} rows)"
                                                        for name, _, rows in done))
        st.rerun()


if "volcano_done" in st.session_state:
    st.success(st.session_state.pop("volcano_done"))
if not any(stored.values()):
    st.info(explorer.volcano_hint(path))
    st.code(f"MINIDB_RESULTS={path} minidb reproduce volcano --quick", language="bash")
    small_run_button()
    st.stop()

# -- the step --------------------------------------------------------------------------------
number = st.select_slider("Tuning step", [s.number for s in STEPS], value=1, key="volcano_step",
                          format_func=lambda n: f"{n} {explorer.volcano_step(n).short}")
step = explorer.volcano_step(number)
st.header(f"{step.number}. {step.title}")
st.caption(f"The paper's {step.section}; minidb's experiment `{step.experiment}`.")
what, found = st.columns(2)
what.markdown(f"**What changes.** {step.change}")
found.markdown(f"**What the paper found.** {step.lesson}")

runs = list(reversed(stored[step.experiment]))  # newest first
chosen = {}
if runs:
    run_ids = [r["run_id"] for r in runs]
    labels = {r["run_id"]: explorer.run_label(r) for r in runs}
    chosen[step.experiment] = st.selectbox("Run of this step", run_ids, format_func=labels.get,
                                           key=f"volcano_run_{step.experiment}")
else:
    st.warning(f"No stored run of {step.experiment} yet: run `minidb reproduce volcano --quick`"
               f" or the small sequence at the bottom of the page.")

frame = explorer.volcano_steps_frame(explorer.volcano_stored_rows(store, chosen))
scales = explorer.volcano_scales(frame)
options, start = explorer.volcano_progress_disks(frame)
if not options:  # the runs stored no rows (an empty run): say so, offer a run that has some
    st.info(f"The stored runs of the tuning sequence hold no rows to draw (a run that stored "
            f"none). Run `MINIDB_RESULTS={path} minidb reproduce volcano --quick`, or the small "
            f"sequence:")
    small_run_button()
    st.stop()
disks = st.selectbox("Disks to follow the sequence at", options,
                     index=options.index(start) if start in options else len(options) - 1,
                     key="volcano_disks")

scale = scales.get(step.number)
if scale is not None and scale != 1.0:
    st.info(f"This run sorts at scale {scale:g} (a fraction of the paper's million records and "
            f"12 MB): compare shapes with the paper, not heights. The elapsed / paper ratio is "
            f"only given at scale 1.")
if len({s for s in scales.values() if s is not None}) > 1:
    st.warning("The steps' runs are at different scales ("
               + ", ".join(f"step {n}: {s:g}" for n, s in scales.items() if s is not None)
               + "): the sequence chart mixes them, and 'before this step' is only drawn "
                 "beside a run of the same scale.")

# -- headline numbers: the kept configuration, against the previous step's -----------------
UNITS = {"elapsed": " s", "lock hold": " s", "lock wait": " s", "unfix calls": ""}
summary = explorer.volcano_step_summary(frame, step.number, disks)
if summary:
    for where, (label, value, before) in zip(st.columns(len(summary)), summary, strict=True):
        shown = "{:,.0f}" if label == "unfix calls" else "{:,.1f}"
        delta, colour = None, "inverse"  # less is better: a drop is green
        if before is not None:
            change = shown.format(value - before)
            if change.lstrip("-") == shown.format(0):
                delta, colour = "no change", "off"
            else:
                delta = ("" if change.startswith("-") else "+") + change + UNITS[label]
        where.metric(f"{label}, {disks} disks", shown.format(value) + UNITS[label],
                     delta=delta, delta_color=colour)
    st.caption(f"The configuration the paper kept ({step.kept}); the change is against the "
               f"configuration the step before kept (same disks and scale).")
else:
    st.caption(f"This run has no {step.kept} at {disks} disks; choose another disk count.")

# -- charts ----------------------------------------------------------------------------------
left, right = st.columns(2)
if (frame["step"] == step.number).any():
    left.subheader("This step")
    left.altair_chart(explorer.volcano_step_chart(frame, step.number), width="content")
    left.caption("Modeled elapsed time per disk count for every variant the step tried; the "
                 "kept one thick, the step before dashed grey, the paper's numbers as black "
                 "diamonds.")
right.subheader(f"The sequence at {disks} disks")
progress = explorer.volcano_progress_frame(frame, disks)
right.altair_chart(explorer.volcano_progress_chart(progress, step.number, disks),
                   width="content")
right.caption("Bars: the configuration each step kept (later steps faded); ticks: the fastest "
              "variant the step tried, kept or not; diamonds: the paper.")

# -- the numbers and the counters behind them -------------------------------------------------
st.subheader("Times and the counters behind them")
table = explorer.volcano_step_table(frame, step.number)
counts = ["unfix calls", "cluster calls", "merge levels"]
shown = {c: "{:,.0f}" for c in counts if c in table}
shown.update({c: "{:.4g}" for c in table.columns
              if c not in shown and table[c].dtype.kind == "f"})
st.dataframe(table.style.format(shown, na_rep="-"), hide_index=True)
st.caption("Lock hold and wait are sums over all processes (as in Table II); the shares are a "
           "process's time holding or waiting for a pool lock as a percent of the elapsed time, "
           "averaged over processes (Figure 4's dashed lines). Unfix calls are the buffer "
           "manager calls that release records, cluster calls those that fix and release "
           "whole clusters. Paper numbers marked '(text)' come from its prose: Figure 1's times "
           "at 2 and 8 disks, and Section 7's 'above 5 minutes' at 16 disks, a lower bound.")

notes = explorer.volcano_step_notes(step.number)
if notes:
    with st.expander("What the paper says around this step"):
        st.markdown("\n".join(f"- {note}" for note in notes))

with st.expander("Run the sequence again, small"):
    st.markdown("Runs every step's experiment at a tenth of the paper's records and memory on "
                "2, 4 and 8 disks (about 10 seconds) and stores each as a new run; the full "
                "sequence is `minidb reproduce volcano --quick`.")
    small_run_button()
