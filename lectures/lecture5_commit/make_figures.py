"""Regenerate the figures of Lecture 5 (logging, recovery and commit protocols) from minidb runs.

    .venv/bin/python lectures/lecture5_commit/make_figures.py                 # about ten seconds
    .venv/bin/python lectures/lecture5_commit/make_figures.py --rows 2000 --out /tmp/figures

Every number drawn is counted, none is timed. ``recovery.png`` kills a process (SIGKILL) part way
through an UPDATE on a real data directory, at several points, and counts what the undo log held
and what restart recovery wrote back. The other four run the commit protocols of
``minidb.txn.commit`` on the seeded simulated network: messages and log forces per commit as the
participants grow, a 2PC commit and a 3PC termination as message-sequence diagrams, the
participants left in doubt when the coordinator crashes for good at each of its steps, and the
log forces group commit saves under load. The PNGs are small (100 dpi) so they can be committed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402

import minidb  # noqa: E402
from minidb.datagen import wisconsin  # noqa: E402
from minidb.txn.commit.matrix import fault_matrix, one_run, summarize  # noqa: E402
from minidb.txn.commit.simnet import Crash  # noqa: E402
from minidb.txn.log import read_log  # noqa: E402
from minidb.txn.undo import BEFORE, COMMIT  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DPI = 100
FIGURES = ("recovery.png", "costs.png", "sequence.png", "blocking.png", "group_commit.png")
PROTOCOLS = ("2pc", "presumed_abort", "presumed_commit", "3pc", "group_commit")
#: marker and line of each protocol: several coincide, and each must stay visible
STYLE = {"2pc": {"marker": "o", "linestyle": "-", "markersize": 8},
         "presumed_abort": {"marker": "s", "linestyle": "--", "markersize": 5},
         "presumed_commit": {"marker": "^", "linestyle": "-"},
         "3pc": {"marker": "D", "linestyle": "-", "markersize": 4},
         "group_commit": {"marker": "x", "linestyle": ":"}}


def _lab_helpers():
    """The message-sequence drawing of Lab 5 (``labs/lab5_commit/helpers.py``), loaded by path
    so that the lecture and the lab draw runs the same way."""
    spec = importlib.util.spec_from_file_location(
        "lab5_helpers", REPO / "labs" / "lab5_commit" / "helpers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KILLED = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.storage.disk import PagedFile
    from minidb.txn.undo import UndoJournal
    path, statement, point = sys.argv[1], sys.argv[2], sys.argv[3]
    if point == "after_commit":
        real_commit = UndoJournal.commit
        def commit(self, catalog):
            real_commit(self, catalog)
            os.kill(os.getpid(), signal.SIGKILL)
        UndoJournal.commit = commit
    else:
        real_write, written = PagedFile.write_pages, [0]
        def write_pages(self, first, pages):
            real_write(self, first, pages)
            written[0] += len(pages)
            if written[0] >= int(point):
                print(written[0], flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        PagedFile.write_pages = write_pages
    minidb.connect(data_dir=path, buffer_pages=16).sql(statement)
""")


def recovery(rows: int, out: Path) -> None:
    """Kill an UPDATE after a share of its pages were written; count the log and the undo."""
    update = "UPDATE t SET unique2 = unique2 + 1000000, ten = 7 WHERE unique1 % 3 = 0"
    data = wisconsin(rows, seed=1)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    labels, written, images, restored = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="lecture5-") as tmp:
        for share in (0.1, 0.25, 0.5, 0.75, 0.95, "after_commit"):
            path = Path(tmp) / f"kill-{share}"
            with minidb.connect(data_dir=path) as db:
                db.create_table("t", data)
                pages = db.table("t").num_pages
            point = share if share == "after_commit" else max(1, int(pages * share))
            child = subprocess.run([sys.executable, "-c", KILLED, str(path), update, str(point)],
                                   env=env, capture_output=True, text=True, timeout=300)
            assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
            log = read_log(path / "wal.log")
            committed = any(r.type == COMMIT for r in log)
            with minidb.connect(data_dir=path) as db:
                said = db.recovery
                undone = db.journal.counters.pages_restored
            labels.append("after\nCOMMIT" if committed else f"{share:.0%}")
            written.append(pages if committed else int(child.stdout))
            images.append(sum(r.type == BEFORE for r in log))
            restored.append(undone)
            print(f"killed {'after the COMMIT record' if committed else f'after {written[-1]}'}"
                  f"{'' if committed else ' pages'} of {pages}: {images[-1]} before-images in "
                  f"the log; recovery {said.split(':')[0]}, {undone} pages written back")
    fig, ax = plt.subplots(figsize=(6.5, 3.3))
    x = range(len(labels))
    ax.bar([v - 0.27 for v in x], written, 0.27, label="pages written in place when killed")
    ax.bar(list(x), images, 0.27, label="before-images in the log")
    ax.bar([v + 0.27 for v in x], restored, 0.27, label="pages written back by recovery")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set(xlabel="killed after this share of the table's pages", ylabel="pages",
           title=f"kill -9 during an UPDATE of {pages} pages (16 buffer frames)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "recovery.png", dpi=DPI)
    plt.close(fig)


def costs(out: Path) -> None:
    """Messages and log forces of one fault-free commit, as the participants grow."""
    sizes = [2, 3, 4, 6, 8]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.3))
    for name in PROTOCOLS:
        runs = [one_run(name, n) for n in sizes]
        left.plot(sizes, [r.messages for r in runs], label=name, **STYLE[name])
        right.plot(sizes, [sum(r.log_forces) for r in runs], label=name, **STYLE[name])
        aborted = one_run(name, 3, votes={(1, 0): False})
        print(f"{name}: commit with 3 participants {runs[1].messages} messages, "
              f"{sum(runs[1].log_forces)} forces ({runs[1].log_forces[0]} at the coordinator); "
              f"abort {aborted.messages} messages, {sum(aborted.log_forces)} forces")
    for read_only in ((1,), (1, 2, 3)):  # R*'s read-only votes (presumed abort uses them)
        r = one_run("presumed_abort", 3, read_only=read_only)
        print(f"presumed_abort, participant(s) {list(read_only)} read-only: {r.messages} "
              f"messages, {sum(r.log_forces)} forces ({r.log_forces[0]} at the coordinator)")
    left.set(xlabel="participants", ylabel="messages", title="one commit, no failure")
    right.set(xlabel="participants", ylabel="log forces (all sites)", title="one commit")
    left.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "costs.png", dpi=DPI)
    plt.close(fig)


def sequence(out: Path) -> None:
    """A 2PC commit, and 3PC finishing without its coordinator."""
    helpers = _lab_helpers()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.6))
    helpers.draw_sequence(left, one_run("2pc", trace=True).trace, 4, "2PC: one commit")
    helpers.draw_sequence(right, one_run("3pc", crash=Crash(0, 9, None), trace=True).trace, 4,
                          "3PC: the coordinator dies after forcing COMMIT")
    fig.tight_layout()
    fig.savefig(out / "sequence.png", dpi=DPI)
    plt.close(fig)


def blocking(out: Path) -> None:
    """Participants in doubt when the coordinator crashes for good at each of its steps."""
    helpers = _lab_helpers()
    fig, ax = plt.subplots(figsize=(6.5, 3.3))
    for name in PROTOCOLS:
        steps = helpers.steps(one_run(name, trace=True).trace, 0)
        stuck = [len(one_run(name, crash=Crash(0, k, None)).blocked(0))
                 for k in range(1, len(steps) + 1)]
        ax.plot(range(1, len(stuck) + 1), stuck, label=name, **STYLE[name])
        print(f"{name}: {len(steps)} coordinator steps, in doubt at each: {stuck}")
    ax.set(xlabel="the coordinator crashes for good before its step",
           ylabel="participants in doubt", title="3 participants, no restart")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "blocking.png", dpi=DPI)
    plt.close(fig)
    for s in summarize(fault_matrix(list(PROTOCOLS))):
        print(f"fault matrix, {s.protocol}: {s.runs} runs, {s.violations} broke a promise, "
              f"{s.blocked_runs} left someone in doubt")


def group_commit(out: Path) -> None:
    """Coordinator forces per commit and time to decide, 16 transactions, as load varies."""
    gaps = [0, 0.5, 1, 2, 3, 5, 8]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    for name in ("presumed_abort", "group_commit"):
        forces, waits = [], []
        for gap in gaps:
            r = one_run(name, txns=16, start_every=gap)
            decided = {t: at for at, site, t, o in r.decisions if site == 0 and o == "commit"}
            forces.append(r.log_forces[0] / len(decided))
            waits.append(sum(decided[t] - t * gap for t in decided) / len(decided))
        left.plot(gaps, forces, label=name, **STYLE[name])
        right.plot(gaps, waits, label=name, **STYLE[name])
        print(f"{name}: coordinator forces per commit {forces[0]:.2f} (all at once) to "
              f"{forces[-1]:.2f} (one every {gaps[-1]} units); time to decide "
              f"{waits[0]:.2f} to {waits[-1]:.2f}")
    left.set(xlabel="time between transactions", ylabel="coordinator forces per commit",
             title="16 transactions")
    right.set(xlabel="time between transactions", ylabel="time from start to decision")
    left.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "group_commit.png", dpi=DPI)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000, help="tuples in the killed table")
    parser.add_argument("--out", type=Path, default=HERE / "figures")
    args = parser.parse_args(argv)
    if args.rows < 1000:
        parser.error("--rows must be at least 1000")
    args.out.mkdir(parents=True, exist_ok=True)
    recovery(args.rows, args.out)
    costs(args.out)
    sequence(args.out)
    blocking(args.out)
    group_commit(args.out)
    print(f"wrote {', '.join(FIGURES)} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
