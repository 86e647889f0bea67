"""Printing and drawing for Lab 5; every event comes from a ``RunResult.trace`` of minidb's
simulated network (``minidb.txn.commit.simnet``).

Nothing here decides anything about a protocol: these functions only pair each message sent with
its delivery and lay the events out as a listing or as a message-sequence diagram (one vertical
line per site, time going down). Keeping this out of the notebook keeps the notebook short;
keeping it out of ``minidb`` keeps the engine free of matplotlib.
"""

from __future__ import annotations

NAMES = {0: "coordinator 0"}


def site_name(site: int) -> str:
    return NAMES.get(site, f"participant {site}")


def messages(trace: list[dict]) -> list[dict]:
    """One entry per message, in the order sent: ``{"at", "src", "dst", "kind", "sent",
    "arrived", "lost"}``, ``at`` being the index of its send in ``trace``. ``arrived`` is None
    for a message that never arrived, and ``lost`` says why (dropped, partition, site down); a
    message delivered twice gets a second entry whose ``at`` is None."""
    out: list[dict] = []
    waiting: dict[tuple, list[dict]] = {}
    for i, e in enumerate(trace):
        key = (e["src"], e["dst"], e["kind"], e["txn"])
        entry = {"at": i, "src": e["src"], "dst": e["dst"], "kind": e["kind"],
                 "sent": e["time"], "arrived": None, "lost": None}
        if e["event"] == "send":
            out.append(entry)
            waiting.setdefault(key, []).append(entry)
        elif e["event"] == "lost" and e.get("why") != "site down":  # never left its sender
            out.append({**entry, "lost": e.get("why", "lost")})
        elif e["event"] in ("deliver", "lost"):  # arrived (at a site that may be down)
            pending = waiting.get(key)
            if pending:
                m = pending.pop(0)
            else:  # delivered once more: the network duplicated it
                m = {**entry, "at": None, "sent": None}
                out.append(m)
            m["arrived"] = e["time"]
            if e["event"] == "lost":
                m["lost"] = e.get("why", "lost")
    return out


def listing(trace: list[dict]) -> list[str]:
    """The run as lines of text: every message with the time it left and arrived, every log
    record (forced or not), every decision, crash and restart, in the order they happened."""
    sent = {m["at"]: m for m in messages(trace) if m["at"] is not None}
    lines = []
    for i, e in enumerate(trace):
        t = f"t={e['time']:>4g}"
        who = site_name(e["src"])
        if i in sent:
            m = sent[i]
            end = (f"LOST ({m['lost']})" if m["lost"] else
                   f"arrives t={m['arrived']:g}" if m["arrived"] is not None else "never arrives")
            lines.append(f"{t}  {who:>13} -> {site_name(e['dst']):<13}  {e['kind'].upper():<9} "
                         f"{end}")
        elif e["event"] == "log":
            forced = "forced" if e.get("forced") else "not forced"
            lines.append(f"{t}  {who:>13}    log {e['kind'].upper()} ({forced})")
        elif e["event"] == "force":
            lines.append(f"{t}  {who:>13}    force the log")
        elif e["event"] == "decide":
            lines.append(f"{t}  {who:>13}    DECIDES {e['kind'].upper()}")
        elif e["event"] == "leave":
            lines.append(f"{t}  {who:>13}    LEAVES (read-only: nothing to commit or undo)")
        elif e["event"] in ("crash", "restart"):
            verb = "CRASHES" if e["event"] == "crash" else "RESTARTS"
            lines.append(f"{t}  {who:>13}    {verb}")
    return lines


def steps(trace: list[dict], site: int) -> list[str]:
    """What ``site`` did at each of its steps (a log write or a message sent), in order: the
    steps a ``Crash(site, step, ...)`` counts."""
    out = []
    for e in trace:
        if e["src"] != site:
            continue
        if e["event"] == "send" or (e["event"] == "lost" and e.get("why") in ("partition",
                                                                                "dropped")):
            out.append(f"send {e['kind'].upper()} to {e['dst']}")
        elif e["event"] == "log":
            out.append(f"{'force' if e.get('forced') else 'write'} {e['kind'].upper()}")
        elif e["event"] == "force":
            out.append("force the log")
    return out


def draw_sequence(ax, trace: list[dict], sites: int, title: str = "") -> None:
    """A message-sequence diagram of ``trace`` on ``ax``: one vertical line per site, time
    downwards, an arrow per message (dashed and crossed when lost), a square per forced log
    record, a star per decision."""
    for s in range(sites):
        ax.axvline(s, color="0.75", linewidth=1, zorder=0)
    labelled = set()  # a fan-out (one sender, one kind, one moment) is labelled once
    for m in sorted(messages(trace), key=lambda m: abs(m["dst"] - m["src"])):
        if m["sent"] is None:
            continue
        colour = {"commit": "tab:green", "abort": "tab:red"}.get(m["kind"], "tab:blue")
        if m["arrived"] is None or m["lost"]:
            end = (m["sent"] + 1.0) if m["arrived"] is None else m["arrived"]
            x = m["src"] + 0.5 * (m["dst"] - m["src"])
            ax.plot([m["src"], x], [m["sent"], (m["sent"] + end) / 2], linestyle="--",
                    color=colour, linewidth=0.9)
            ax.plot([x], [(m["sent"] + end) / 2], marker="x", color=colour)
            continue
        ax.annotate("", xy=(m["dst"], m["arrived"]), xytext=(m["src"], m["sent"]),
                    arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 0.9})
        if (m["src"], m["kind"], m["sent"]) not in labelled:
            labelled.add((m["src"], m["kind"], m["sent"]))
            ax.text(m["src"] + 0.5 * (m["dst"] - m["src"]), (m["sent"] + m["arrived"]) / 2,
                    m["kind"], fontsize=6, color=colour, ha="center", va="center",
                    bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "linewidth": 0})
    for e in trace:
        if e["event"] == "log" and e.get("forced"):
            ax.plot([e["src"]], [e["time"]], marker="s", color="black", markersize=5)
            ax.text(e["src"] + 0.06, e["time"], e["kind"], fontsize=6, va="bottom")
        elif e["event"] == "decide":
            ax.plot([e["src"]], [e["time"]], marker="*", markersize=10,
                    color="tab:green" if e["kind"] == "commit" else "tab:red")
        elif e["event"] == "crash":
            ax.plot([e["src"]], [e["time"]], marker="X", markersize=10, color="black")
    ax.set_xticks(range(sites), [site_name(s).replace(" ", "\n") for s in range(sites)],
                  fontsize=7)
    ax.set_ylim(max((e["time"] for e in trace), default=0) + 1, -1)  # time goes down
    ax.set_ylabel("time (network units)")
    ax.set_title(title, fontsize=9)
