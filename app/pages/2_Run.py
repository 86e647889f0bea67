"""Run: choose an experiment and its configuration (node counts, profile, scale...), run it with
a progress bar, store it as a new run and show its rows."""

import explorer
import explorer_ui as ui
import pandas as pd
import streamlit as st

from minidb.experiments import PAPERS, experiments

ui.page("Run an experiment",
        "Choose a configuration, run it on the modeled hardware, keep it in the results store.")
path = ui.store_path()

exps = {e.name: e for e in experiments()}
name = st.selectbox("Experiment", list(exps), format_func=lambda n: f"{n}: {exps[n].title}",
                    key="run_experiment")
exp = exps[name]
st.caption(f"Reproduces {', '.join(exp.references)} of {PAPERS[exp.paper]}. The widgets start "
           f"at the quick settings; the paper's own configuration is in the table below.")

if not explorer.takes_partitioner(exp):
    st.info(f"{name} takes no partitioner: it declusters its relations the way the paper did. "
            f"These are the parameters it takes:")
st.dataframe(explorer.parameters_frame(exp), hide_index=True)

if explorer.takes_plugin(exp):
    with st.expander("Your own partitioner or replacement policy (a plug-in file)",
                     expanded=bool(st.session_state.get("run_plugin_message"))):
        st.markdown(
            "A `.py` file whose classes are decorated with `@register(\"partitioner\", "
            "\"my_name\")` (see `minidb/parallel/partitioners.py`) or "
            "`@register(\"buffer_policy\", \"my_policy\")` (see `minidb/buffer/policy.py`), "
            "as in Lab 1's assignment. Once loaded, a partitioner is offered as "
            "`my_name(unique1)` in the *partitioner* choice below and a policy by its name in "
            "*buffer_policy*; tick *also run the paper's choices* to compare yours with them "
            "on the Compare runs page. Plug-ins loaded here run on the inline backend.")
        plugin_path = st.text_input("Path of the plug-in file", key="run_plugin_path",
                                    placeholder="/home/me/lab1/my_partitioner.py")
        if st.button("Load plug-in", key="run_plugin_load"):
            try:
                loaded = explorer.load_plugin_file(plugin_path)
            except explorer.PluginFileError as err:
                st.session_state["run_plugin_message"] = ("error", str(err))
            else:
                st.session_state["run_plugin_message"] = (
                    "success", "Loaded " + ", ".join(f"{kind} {name!r}" for kind, name in loaded)
                    + f" from {plugin_path.strip()}.")
        if st.session_state.get("run_plugin_message"):
            level, message = st.session_state["run_plugin_message"]
            (st.error if level == "error" else st.success)(message)

specs = explorer.parameter_specs(exp)
with st.form(key=f"run_form_{name}"):
    values = {}
    columns = st.columns(3)
    for i, spec in enumerate(specs):
        where = columns[i % 3]
        key = f"run_{name}_{spec.name}"
        if spec.widget == "checkbox":
            values[spec.name] = where.checkbox(spec.name, value=spec.default, help=spec.help,
                                               key=key)
        elif spec.widget == "select":
            values[spec.name] = where.selectbox(spec.name, spec.options,
                                                index=spec.options.index(spec.default),
                                                help=spec.help, key=key)
        elif spec.widget == "multiselect":
            values[spec.name] = where.multiselect(
                spec.name, spec.options, default=spec.default, help=spec.help, key=key,
                format_func=lambda v, n=spec.name: explorer.format_option(n, v))
        elif spec.widget == "number" and isinstance(spec.paper, float):
            values[spec.name] = where.number_input(
                spec.name, min_value=0.001 if spec.name == "scale" else None,
                max_value=1.0 if spec.name == "scale" else None, value=float(spec.default),
                step=0.01, format="%.3f", help=spec.help, key=key)
        elif spec.widget == "number":
            values[spec.name] = where.number_input(
                spec.name, min_value=1 if spec.name in ("nodes", "partitions") else 0,
                value=int(spec.default), step=1, help=spec.help, key=key)
        else:
            values[spec.name] = where.text_input(spec.name, value=spec.default, help=spec.help,
                                                 key=key)
    builtin = explorer.builtin_plugins(exp)
    also_builtin = False
    if builtin:
        also_builtin = st.checkbox(
            f"Also run the paper's choices ({', '.join(builtin.values())}) first, to compare "
            f"with them", key=f"run_{name}_also_builtin",
            help="Two runs are stored: the paper's partitioner and policy, then yours; Compare "
                 "runs opens on those two.")
    submitted = st.form_submit_button("Run and store", type="primary", key="run_submit")

if submitted:
    empty = [k for k, v in values.items() if isinstance(v, list) and not v]
    if empty:
        st.error(f"Choose at least one value for {', '.join(empty)}.")
    else:
        store = ui.open_store(path, create=True)
        try:
            if also_builtin and any(values.get(k) != v for k, v in builtin.items()):
                explorer.run_configuration(exp, store, {**values, **builtin},
                                           ui.progress_bar(f"{name}, the paper's choices"))
            progress = ui.progress_bar(name)
            run_id, rows = explorer.run_configuration(exp, store, values, progress)
        except Exception as err:  # any failure is shown on the page, and the run kept as failed
            st.error(f"{name} failed: {err}. The run is recorded as failed in {path}.")
            with st.expander("Traceback"):
                st.exception(err)
        else:
            st.session_state["run_last"] = {"run_id": run_id, "experiment": name, "rows": rows}

last = st.session_state.get("run_last")
if last:
    st.success(f"Stored run {last['run_id']} of {last['experiment']}: {len(last['rows'])} rows "
               f"in {path}.")
    st.dataframe(explorer.rows_frame(last["rows"]), hide_index=True)
    st.page_link("pages/1_Published_vs_reproduced.py", label="See it beside the paper",
                 icon=":material/compare_arrows:")
    st.page_link("pages/3_Compare_runs.py", label="Compare it with the run before it",
                 icon=":material/difference:")

store = None
with ui.user_errors():  # a damaged or busy store is one red line here too, not a traceback
    store = ui.guarded(explorer.open_store(path))
if store is not None:
    recent = store.runs(experiment=name)[-5:][::-1]
    if recent:
        st.subheader(f"Recent runs of {name}")
        st.dataframe(pd.DataFrame([{"run": r["run_id"], "status": r["status"],
                                    "scale": r["scale"], "nodes": r["nodes"],
                                    "profile": r["profile"],
                                    "seconds": r["duration_s"], "error": r["error"] or ""}
                                   for r in recent]), hide_index=True)
