"""minidb explorer, home page: what the explorer is, which papers have stored runs, and how to
fill the store. Start it with ``streamlit run app/Home.py`` (see app/README.md)."""

import explorer
import explorer_ui as ui
import streamlit as st

from minidb.experiments import PAPERS

ui.page("minidb explorer",
        "Classic parallel database papers, rebuilt in minidb: their numbers beside ours.")

st.markdown(
    "minidb rebuilds the experiments of five classic papers on parallel database systems "
    "(Gamma, NonStop SQL, Volcano, LH*, Distributed INGRES) on a small engine whose parts can be "
    "replaced. Every run of an experiment is kept in a **results store** with the papers' "
    "published numbers beside it. The pages on the left:\n\n"
    "- **Published vs reproduced**: a table or figure of a paper, cell by cell and as curves.\n"
    "- **Run**: run an experiment with your own node counts, profile and scale, or with your "
    "own partitioner or replacement policy (a plug-in file).\n"
    "- **Compare runs**: two runs of an experiment side by side, as curves and row by row.\n"
    "- **Findings**: each paper's headline claims, checked on the stored rows.\n"
    "- **LH star**, **Joins**, **Volcano tuning**: one paper's story page by page (the LH* "
    "file, the join algorithms and memory, Volcano's tuning steps with the counters behind "
    "each time).\n"
    "- **Commit protocols**: one commit as a message-sequence diagram, under the crashes and "
    "losses you choose (2PC blocks where 3PC terminates)."
)

path = ui.store_path()
st.subheader("Results store")
st.code(path, language=None)
store = ui.open_store(path, stop=False)

if store is not None:
    summary = explorer.papers_summary(store)
    if summary.empty:
        st.info("The store holds no runs yet. Reproduce a paper below or use the Run page.")
    else:
        st.markdown(f"Papers with stored runs: **{', '.join(summary['paper'])}**")
        st.dataframe(summary, hide_index=True)

st.subheader("Reproduce a paper quickly")
st.markdown(
    "Runs every experiment of the paper at its *quick* settings (small relations, a few node "
    "counts): about 30 seconds for Gamma on a laptop. From a shell, the same is:")
st.code(f"MINIDB_RESULTS={path} minidb reproduce gamma --quick\n"
        f"MINIDB_RESULTS={path} minidb report gamma\n"
        f"MINIDB_RESULTS={path} streamlit run app/Home.py", language="bash")

papers = explorer.papers_with_experiments()
paper = st.selectbox("Paper", papers, format_func=lambda p: f"{p}: {PAPERS[p]}",
                     key="home_paper")
if st.button(f"Reproduce {paper} (quick)", key="home_reproduce", type="primary"):
    store = ui.open_store(path, create=True)
    with ui.user_errors():
        done = explorer.reproduce_quickly(
            paper, store, progress_for=lambda exp: ui.progress_bar(exp.name))
        # rerun so the table of papers above includes the new runs; the message survives it
        st.session_state["home_done"] = (
            f"Stored {len(done)} run(s) of {paper}: "
            + ", ".join(f"{name} ({rows} rows, run {run_id})" for name, run_id, rows in done))
        st.rerun()
if "home_done" in st.session_state:
    st.success(st.session_state.pop("home_done"))
