"""Commit protocols: one transaction's commit drawn as a message-sequence diagram, under the faults
you choose (a crash at any step, lost and doubled messages, a partition), with what every site
decided and whether a promise broke; and, below, what each protocol costs without faults. The
protocols and the simulated network are ``minidb.txn.commit``; this page only runs
``matrix.one_run`` and draws its trace."""

import math

import altair as alt
import explorer
import explorer_ui as ui
import pandas as pd
import streamlit as st

from minidb.plugins import names
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR
from minidb.txn.commit.matrix import UNTIL, fault_matrix, one_run, protocol, summarize
from minidb.txn.commit.simnet import Crash, Partition, SimulatedNetwork

ROW_PX = 18  # the diagram's height per trace event
DIAGRAM_PX = 1000  # its widest (sites share it, 150 pixels each at most)
COLOURS = {COMMIT: "#2e7d32", ABORT: "#c62828", "crash": "#c62828", "restart": "#2e7d32",
           "other": "#424242"}

ui.page("Commit protocols: one commit, message by message",
        "A coordinator and its participants agree to commit or abort one transaction over a "
        "simulated network that can lose, double and cut off messages and crash a site at any "
        "step (2PC, presumed abort and commit, 3PC, group commit; Lab 5).")

st.markdown(
    "**What to show.** Choose **2pc** and crash the **coordinator** just after it decided "
    "(the step the crash list opens on), without a restart: the participants voted yes, so none "
    "may abort on its own, and none knows the decision; they ask and ask, and end the run "
    "*blocked*. Switch to **3pc**: its extra round (pre-commit) lets the participants elect a "
    "new coordinator that finishes the transaction, so nobody is left in doubt. Then let the "
    "crashed coordinator restart (2PC ends, because its forced COMMIT record survived), and try "
    "a participant's crash, lost messages or a partition: whatever fails, no site decides "
    "differently from another.")


def site_name(site: int) -> str:
    return "coordinator" if site == COORDINATOR else f"P{site}"


# -- the run to draw ---------------------------------------------------------------------------
available = names("commit")
setup = st.columns(5)
chosen = setup[0].selectbox("Protocol", available,
                            index=available.index("2pc") if "2pc" in available else 0,
                            key="commit_protocol")
participants = int(setup[1].number_input("Participants", 1, 8, 3, key="commit_participants"))
seed = int(setup[2].number_input("Seed", 0, 10_000, 0, key="commit_seed",
                                 help="The network draws delays and losses from it: one seed "
                                      "replays the same run, event for event."))
votes = {(1, 0): False} if setup[3].checkbox("P1 votes no", key="commit_no_vote") else None
read_only = (2,) if participants >= 2 and setup[4].checkbox(
    "P2 changed nothing", key="commit_read_only",
    help="P2 is read-only: under presumed abort it votes READ, logs nothing and leaves after "
         "phase one (R*'s read-only optimization); the other protocols let it take part as "
         "any other participant.") else ()


def user_error(err: Exception) -> None:
    st.error(f"{chosen} failed: {type(err).__name__}: {err}. A protocol of your own: fix it "
             "and rerun (its class is in the file that registers it).")
    st.stop()


def steps_of(name: str, n: int, site: int, no_vote: bool, seed: int,
             read_only: tuple[int, ...] = ()) -> list[str]:
    """What ``site`` does at each of its steps in a fault-free run: 'log commit (forced)',
    'send prepare to P2'... (a crash at step k happens just before the k-th)."""
    net = SimulatedNetwork(protocol(name), n, seed=seed, trace=True,
                           votes={(1, 0): False} if no_vote else None,
                           read_only={(p, 0) for p in read_only})
    net.run(until=UNTIL)
    labels, decided = [], False
    for e in net.trace:
        if e["src"] != site:
            continue
        if e["event"] == "decide":
            decided = True
            continue
        if e["event"] == "log":
            what = f"log {e['kind']}" + (" (forced)" if e["forced"] else "")
        elif e["event"] == "force":
            what = "force the log"
        elif e["event"] == "send" or (e["event"] == "lost" and e.get("why") != "site down"):
            what = f"send {e['kind']} to {site_name(e['dst'])}"
        else:
            continue
        labels.append(what + (", after its decision" if decided else ""))
    labels += ["a step the trace does not show"] * (net.sites[site].steps - len(labels))
    return labels


faults = st.columns(4)
crash_options = ["none", "coordinator"] + [f"participant {p}" for p in
                                           range(1, participants + 1)]
crashed = faults[0].selectbox("Crash", crash_options, key="commit_crash")
crash = None
if crashed != "none":
    site = COORDINATOR if crashed == "coordinator" else int(crashed.split()[1])
    try:
        labels = steps_of(chosen, participants, site, votes is not None, seed, read_only)
    except Exception as err:  # a student's protocol: say what broke, in one line
        user_error(err)
    if labels:
        after = [i for i, label in enumerate(labels) if label.endswith("after its decision")]
        default = after[0] if site == COORDINATOR and after else min(1, len(labels) - 1)
        step = faults[1].selectbox(
            "Just before its step", range(1, len(labels) + 1), index=default,
            format_func=lambda k: f"{k}: {labels[k - 1]}",
            help="The site's steps (log writes and messages sent) in a run without faults: "
                 "lost messages or a partition can change what its k-th step is.",
            key=f"commit_step_{chosen}_{participants}_{site}_{votes is not None}"
                + ("_read_only" if read_only else ""))
        restarts = faults[2].checkbox("It restarts", key="commit_restart",
                                      help="Off: the site stays down for good.")
        after_units = faults[2].number_input("after (time units)", 1, 500, 30,
                                             key="commit_restart_after",
                                             disabled=not restarts)
        crash = Crash(site, int(step), float(after_units) if restarts else None)
    else:
        faults[1].caption(f"{site_name(site)} takes no step in this run: nothing to crash.")
drop = faults[3].slider("Messages lost", 0.0, 0.5, 0.0, 0.05, key="commit_drop")
duplicate = faults[3].slider("Messages delivered twice", 0.0, 0.5, 0.0, 0.05,
                             key="commit_duplicate")

partitions = None
if st.checkbox("Cut the network in two for a while", key="commit_partition"):
    cut = st.columns(3)
    start = cut[0].number_input("from time", 0, 1000, 2, key="commit_partition_start")
    end = cut[1].number_input("to time", 1, 2000, 40, key="commit_partition_end")
    side = cut[2].multiselect("one side", list(range(participants + 1)), [COORDINATOR],
                              format_func=site_name, key=f"commit_partition_side_{participants}")
    if end <= start or not side or len(side) == participants + 1:
        st.warning("A partition needs an end after its start and sites on both sides: none is "
                   "applied.")
    else:
        partitions = [Partition(float(start), float(end), frozenset(side))]

try:
    run = one_run(chosen, participants, seed=seed, drop=drop, crash=crash, votes=votes,
                  trace=True, duplicate=duplicate, partitions=partitions, read_only=read_only)
except Exception as err:  # a student's protocol: say what broke, in one line
    user_error(err)
trace = run.trace


# -- the diagram -------------------------------------------------------------------------------
def sequence_frames(trace: list[dict], sites: int, limit: int) -> dict[str, pd.DataFrame]:
    """The first ``limit`` trace events as the diagram's marks: one row (y) per event, one
    lifeline (x) per site (``sites`` of them, the coordinator's first). Messages pair a send with its delivery (or its loss at a site that
    was down); a duplicate delivery reuses the send it copies."""
    shown = trace[:limit]
    messages, marks, times = [], [], []
    pending: dict[tuple, list[int]] = {}
    last_sent: dict[tuple, int] = {}

    def tip(e: dict) -> dict:
        return {"time": e["time"], "event": e["event"], "kind": e["kind"] or "-",
                "from": site_name(e["src"]),
                "to": "-" if e["dst"] is None else site_name(e["dst"])}

    def message(e: dict, y: float, sent: int | None, fate: str) -> None:
        x, x2 = e["src"], e["dst"]
        if sent is None:  # lost as it was sent: a stub toward the receiver
            y1, y2, x2 = y, y + 0.6, x + 0.35 * (x2 - x)
        else:
            y1, y2 = sent, y
        messages.append({"x": x, "y": y1, "x2": x2, "y2": y2, "mid_x": (x + x2) / 2,
                         "mid_y": (y1 + y2) / 2, "fate": fate, **tip(e)})

    for row, e in enumerate(shown):
        if not times or times[-1]["time"] != e["time"]:
            times.append({"y": row, "time": e["time"], "label": f"t={e['time']:g}"})
        key = (e["src"], e["dst"], e["kind"], e["txn"])
        event, why = e["event"], e.get("why")
        if event == "send":
            pending.setdefault(key, []).append(row)
        elif event == "deliver" or (event == "lost" and why == "site down"):
            queue = pending.get(key)
            sent = queue.pop(0) if queue else last_sent.get(key, row - 1)
            last_sent[key] = sent
            message(e, row, sent, "delivered" if event == "deliver" else "lost: site down")
        elif event == "lost":
            message(e, row, None, f"lost: {why}")
        else:
            site = e["src"]
            if event == "log":
                label, shape = e["kind"] + (" (forced)" if e["forced"] else ""), (
                    "forced log write" if e["forced"] else "log write")
            elif event == "force":
                label, shape = "force", "forced log write"
            elif event == "decide":
                label, shape = e["kind"].upper(), f"decide {e['kind']}"
            elif event == "crash":
                label, shape = f"CRASH (step {e.get('step', '?')})", "crash"
            elif event == "leave":
                label, shape = "read-only: leaves", "leave"
            else:
                label, shape = "restart", "restart"
            tone = COLOURS.get(e["kind"] if event == "decide" else event, COLOURS["other"])
            marks.append({"x": site, "y": row, "label": label, "mark": shape, "tone": tone,
                          "angle": 45 if event == "crash" else 0, **tip(e)})
    # lifelines: solid while the site is up, dashed while it is down
    lines, bottom = [], max(len(shown), 1)
    down_from = {}
    for row, e in enumerate(shown):
        if e["event"] == "crash":
            down_from[e["src"]] = row
        elif e["event"] == "restart" and e["src"] in down_from:
            lines.append({"x": e["src"], "y": down_from.pop(e["src"]), "y2": row, "up": "down"})
    for site, row in down_from.items():
        lines.append({"x": site, "y": row, "y2": bottom, "up": "down"})
    lines += [{"x": s, "y": -0.5, "y2": bottom, "up": "up"} for s in range(sites)]
    return {"messages": pd.DataFrame(messages, columns=[
                "x", "y", "x2", "y2", "mid_x", "mid_y", "fate", "time", "event", "kind",
                "from", "to"]),
            "marks": pd.DataFrame(marks, columns=["x", "y", "label", "mark", "tone", "angle",
                                                  "time", "event", "kind", "from", "to"]),
            "times": pd.DataFrame(times, columns=["y", "time", "label"]),
            "lines": pd.DataFrame(lines, columns=["x", "y", "y2", "up"])}


def sequence_chart(frames: dict[str, pd.DataFrame], sites: int, rows: int) -> alt.Chart:
    """Lifelines top to bottom, arrows for messages (an X where one was lost), squares for log
    writes (filled: forced), diamonds for decisions, crosses for crashes."""
    width, height = min(150, DIAGRAM_PX // sites) * sites, ROW_PX * max(rows, 8)
    x_scale = alt.Scale(domain=[-0.85, sites - 0.5], nice=False, zero=False)
    y_scale = alt.Scale(domain=[-1, max(rows, 8)], reverse=True, nice=False, zero=False)
    x_axis = alt.Axis(orient="top", values=list(range(sites)), grid=False, ticks=False,
                      domain=False, labelFontSize=13, labelFontWeight="bold",
                      labelExpr="datum.value == 0 ? 'coordinator' : 'P' + datum.value")

    def at(x_field: str = "x", y_field: str = "y") -> dict:
        """Position channels: every layer shares the scales and the (one) axis."""
        return {"x": alt.X(f"{x_field}:Q", scale=x_scale, axis=x_axis, title=None),
                "y": alt.Y(f"{y_field}:Q", scale=y_scale, axis=None)}

    tooltip = ["time:Q", "event:N", "kind:N", "from:N", "to:N"]
    px_x, px_y = width / (sites - 0.5 + 0.85), height / (max(rows, 8) + 1)

    lines = alt.Chart(frames["lines"]).mark_rule().encode(
        **at(), y2="y2:Q",
        color=alt.condition("datum.up == 'up'", alt.value("#9e9e9e"), alt.value("#ef9a9a")),
        strokeWidth=alt.condition("datum.up == 'up'", alt.value(1), alt.value(5)),
        strokeDash=alt.condition("datum.up == 'up'", alt.value([1, 0]), alt.value([4, 3])))
    times = alt.Chart(frames["times"].assign(x=-0.8)).mark_text(
        align="left", fontSize=10, color="#757575").encode(**at(), text="label:N")
    messages = frames["messages"].copy()
    # the arrowhead's direction on screen (degrees clockwise from up)
    messages["angle"] = [math.degrees(math.atan2((x2 - x1) * px_x, -(y2 - y1) * px_y)) % 360
                         for x1, y1, x2, y2 in messages[["x", "y", "x2", "y2"]].itertuples(
                             index=False)]
    messages["lost"] = messages["fate"] != "delivered"
    kind = alt.Color("kind:N", title="message", scale=alt.Scale(scheme="category10"),
                     legend=alt.Legend(orient="bottom", columns=6))
    base = alt.Chart(messages)
    arrows = base.mark_rule(strokeWidth=1.5).encode(
        **at(), x2="x2:Q", y2="y2:Q", color=kind,
        strokeDash=alt.condition("datum.lost", alt.value([3, 3]), alt.value([1, 0])),
        tooltip=tooltip + ["fate:N"])
    heads = base.transform_filter("!datum.lost").mark_point(
        shape="triangle", filled=True, size=70, opacity=1).encode(
        **at("x2", "y2"), color=kind,
        angle=alt.Angle("angle:Q", scale=None), tooltip=tooltip)
    losses = base.transform_filter("datum.lost").mark_point(
        shape="cross", angle=45, filled=True, size=120, color="#c62828", opacity=1).encode(
        **at("x2", "y2"), tooltip=tooltip + ["fate:N"])
    names_ = base.mark_text(fontSize=10, fontWeight="bold", dy=-6).encode(
        **at("mid_x", "mid_y"), text="kind:N",
        color=kind)

    shapes = {"forced log write": "square", "log write": "square", "crash": "cross",
              "restart": "triangle-up", "leave": "triangle-down", f"decide {COMMIT}": "diamond",
              f"decide {ABORT}": "diamond"}
    fills = {"forced log write": "#212121", "log write": "white", "crash": "#c62828",
             "restart": COLOURS["restart"], "leave": "white", f"decide {COMMIT}": COLOURS[COMMIT],
             f"decide {ABORT}": COLOURS[ABORT]}
    kinds = [k for k in shapes if k in set(frames["marks"]["mark"])] or list(shapes)
    legend = alt.Legend(orient="bottom", title="on a lifeline", columns=3)
    marks = alt.Chart(frames["marks"]).mark_point(size=110, opacity=1, stroke="#212121",
                                                 strokeWidth=1).encode(
        **at(),
        shape=alt.Shape("mark:N", scale=alt.Scale(domain=kinds, range=[shapes[k] for k in kinds]),
                        legend=legend),
        fill=alt.Fill("mark:N", scale=alt.Scale(domain=kinds, range=[fills[k] for k in kinds]),
                      legend=legend),
        angle=alt.Angle("angle:Q", scale=None), tooltip=tooltip)
    labels = alt.Chart(frames["marks"]).mark_text(align="left", dx=9, fontSize=11).encode(
        **at(), text="label:N", color=alt.Color("tone:N", scale=None))
    chart = alt.layer(lines, times, arrows, heads, losses, names_, marks, labels)
    return chart.properties(
        width=width, height=height, autosize=explorer.PAD)


# -- what happened -----------------------------------------------------------------------------
everyone_recovers = crash is None or crash.restart_after is not None
violations = run.violations(everyone_recovers=everyone_recovers)
blocked = run.blocked(0)
told = run.outcome(COORDINATOR, 0)
numbers = st.columns(5)
numbers[0].metric("client told", told.upper() if told else "nothing")
numbers[1].metric("participants in doubt", len(blocked))
numbers[2].metric("promises broken", len(violations))
numbers[3].metric("messages", run.messages)
numbers[4].metric("log forces", sum(run.log_forces))

if len(trace) > 1:
    limit = st.slider("Events drawn, from the start", 1, len(trace), min(len(trace), 120),
                      key="commit_events",
                      help="A blocked run goes on asking until the simulation stops (time "
                           f"{UNTIL:g}); the first events tell its story.")
else:
    limit = len(trace)
frames = sequence_frames(trace, participants + 1, limit)
st.altair_chart(sequence_chart(frames, participants + 1, limit), width="content")
hidden = len(trace) - limit
st.caption("Time runs down, one row per event (the grey labels give the simulated time); an "
           "arrow is a message from its sending to its delivery, dashed with a red X where it "
           "was lost; a filled square is a forced log record, a hollow one a record that is "
           "not forced; diamonds are decisions; a dashed red stretch of a lifeline is a site "
           "that is down. " + (f"{hidden} later events (until time {trace[-1]['time']:g}) are "
                                "not drawn." if hidden > 0 else ""))

if blocked:
    st.warning(f"Blocked: {', '.join(site_name(p) for p in blocked)} voted yes and still do not "
               f"know the outcome at the end of the run (time {UNTIL:g}). Having voted yes, a "
               "participant may not abort on its own, and it cannot commit without being told.")
elif crash is not None and crash.site == COORDINATOR and crash.restart_after is None:
    st.success("The coordinator never came back, and no participant is left in doubt.")
if violations:
    st.error("Promises broken:\n\n" + "\n".join(f"- {v}" for v in violations))
else:
    st.success("No promise broken: every site that decided decided the same, nothing committed "
               "without every yes" + (", and a commit reached every participant."
                                      if everyone_recovers else "."))

sites = []
for s in range(participants + 1):
    decided = [(t, o) for t, site, txn, o in run.decisions if site == s and txn == 0]
    vote = "-" if s == COORDINATOR or (s, 0) not in run.voted else (
        "no" if run.votes.get((s, 0)) is False else "read" if run.has_left(s, 0) else "yes")
    sent = sum(1 for e in trace if e["src"] == s and (
        e["event"] == "send" or (e["event"] == "lost" and e.get("why") != "site down")))
    sites.append({"site": site_name(s), "up at the end": "yes" if run.up[s] else "no",
                  "vote": vote, "outcome": decided[-1][1] if decided else "-",
                  "decided at": decided[-1][0] if decided else None,
                  "in doubt": "yes" if s in blocked else "",
                  "messages sent": sent, "log records": run.log_records[s],
                  "log forces": run.log_forces[s]})
st.dataframe(pd.DataFrame(sites), hide_index=True)
st.caption("The outcome is the last decision the site made (a site that restarted decides again "
           "from its log); in doubt: voted yes, is up, and has not decided. A participant that "
           "voted read changed nothing: it left after phase one and needs no outcome.")


# -- every protocol, no fault ------------------------------------------------------------------
@st.cache_data(show_spinner="Running every protocol's fault matrix...")
def compared(protocols: tuple[str, ...], n: int) -> pd.DataFrame:
    summary = summarize(fault_matrix(list(protocols), participants=n, seeds=range(1)), n)
    return pd.DataFrame([{
        "protocol": s.protocol, "commit: messages": s.commit_messages,
        "commit: forces": s.commit_forces, "abort: messages": s.abort_messages,
        "abort: forces": s.abort_forces,
        "commit, P1 read-only: messages": s.read_only_messages,
        "commit, P1 read-only: forces": s.read_only_forces, "crash runs": s.runs,
        "coordinator gone, someone blocked": s.blocked_runs, "promises broken": s.violations}
        for s in summary])


st.subheader(f"Every protocol, {participants} participant(s)")
try:
    table = compared(tuple(available), participants)
except Exception as err:  # a student's protocol: say what broke, in one line
    st.error(f"The fault matrix failed: {type(err).__name__}: {err}")
else:
    st.dataframe(table, hide_index=True)
    st.caption("Messages and log forces of a fault-free commit, of an abort (P1 votes no) and "
               "of a commit in which P1 changed nothing (read-only). Then the fault matrix with "
               "one seed: the coordinator and P1 crashed before each of their steps, over "
               "reliable and lossy links, plus the coordinator crashed for good at each step "
               "(for presumed abort again with read-only participants, P2 crashed too); "
               "'blocked' counts those last runs that left a participant in doubt. Presumed "
               "abort saves the abort's forces and acknowledgements, and a read-only "
               "participant's prepare record, outcome and acknowledgement (R*'s READ vote); "
               "presumed commit saves the commit's; 3PC pays a round more to never block; group "
               "commit's savings show under load (benchmarks/bench_commit.py).")
