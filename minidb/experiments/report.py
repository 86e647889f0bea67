"""Text layout of ``minidb report``: a legend saying how to read it; then per paper, the runs
compared, each table or figure with reproduced and published values side by side and their ratio,
then the findings as PASS / FAIL / NOT CHECKED, then a one-line summary; over several papers, a
total line."""

from __future__ import annotations

from itertools import groupby

from minidb.experiments.reproduce import RATIO_TABLES, PaperReport, total_line


def _number(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def legend_lines(reports: list[PaperReport]) -> list[str]:
    """What the columns, marks and statuses of the report mean, for the papers in ``reports``."""
    tolerances = {RATIO_TABLES[(r.paper, ref)] for r in reports for (paper, ref) in RATIO_TABLES
                  if paper == r.paper}
    ratio_tables = ", ".join(f"{paper} {ref}" for paper, ref in RATIO_TABLES
                             if any(r.paper == paper for r in reports))
    lines = [
        "How to read this report",
        "  minidb       the value minidb reproduced, from the modeled clock: the time the paper's",
        "               hardware would need for the work minidb counted (a speedup or scaleup is",
        "               a ratio of such times; the hardware figures are in minidb/cost/profiles.py)",
        "  paper        the value the paper publishes for the same cell (datasets/reference/)",
        "  ratio        minidb / paper: 1 is a perfect match, 2 twice the paper's, 0.5 half of it",
        "  within 2x    a cell counts as reproduced when its ratio lies between 0.5 and 2;",
        "               a cell outside is marked '>2x'",
    ]
    for tolerance in sorted(tolerances):
        lines += [
            f"  within {tolerance:.0%}".ljust(15) + f"in tables of ratios ({ratio_tables}), where a "
            "factor of 2",
            f"               would accept almost anything, the ratio must lie within {tolerance:.0%} "
            "of 1;",
            f"               a cell outside is marked '>{tolerance:.0%} off'",
        ]
    lines += [
        "  calibration  a hardware constant was derived from this cell, so matching it proves",
        "               nothing: it is shown but not counted as reproduced",
        "  prose        a number the paper states in its text rather than in a table; its",
        "               reference names the section, and it is compared like a table cell",
        "  findings     the paper's claims (a trend, an ordering, a bound), checked on the rows:",
        "               PASS the stored rows bear the claim out; FAIL they contradict it;",
        "               NOT CHECKED the rows it needs are missing, or the model leaves out the",
        "               cause the claim rests on ('measured:' says which)",
        "",
    ]
    return lines


def format_report(reports: list[PaperReport], legend: bool = True) -> str:
    """The text report over ``reports`` (one per paper), with the legend first if ``legend``."""
    lines: list[str] = legend_lines(reports) if legend else []
    for rep in reports:
        lines += [f"== {rep.paper}: {rep.title}", ""]
        lines += _runs_lines(rep)
        cells = sorted(rep.cells, key=lambda c: (c["reference"], c["row"], c["column"]))
        missing = []
        for reference, group in groupby(cells, key=lambda c: c["reference"]):
            group = list(group)
            if not any(c.get("reproduced") is not None for c in group):
                missing.append(f"{reference} ({len(group)})")
                continue
            lines.append(f"{reference}  (reproduced on the modeled clock)")
            lines.append(f"  {'row':44} {'column':18} {'metric':22} {'minidb':>9} {'paper':>9} "
                         f"{'ratio':>6}")
            for c in group:
                within = c.get("within", c.get("within_2x"))
                bar = f">{c['tolerance']:.0%} off" if c.get("tolerance") else ">2x"
                mark = "" if within is None or within else f"  {bar}"
                if c.get("calibration"):
                    mark = "  calibration (a constant was derived from this cell)"
                elif c.get("status") == "prose":
                    mark = f"  prose{mark}"
                lines.append(f"  {c['row']:44} {c['column']:18} {c['metric']:22} "
                             f"{_number(c.get('reproduced')):>9} {_number(c.get('published')):>9} "
                             f"{_number(c.get('ratio')):>6}{mark}")
            lines.append("")
        if missing:
            lines += ["Published numbers not reproduced by the stored runs (cells): "
                      + ", ".join(missing), ""]
        lines.append("Findings")
        for f in rep.findings:
            lines.append(f"  {f.status.upper():12} {f.name}  ({f.source})")
            lines.append(f"  {'':12} {f.claim}")
            lines.append(f"  {'':12} measured: {f.detail}")
        lines += ["", rep.summary(), ""]
    if len(reports) > 1:
        lines += [total_line(reports), ""]
    return "\n".join(lines)


def _runs_lines(rep: PaperReport) -> list[str]:
    """Which runs the numbers below come from, and how many stored runs are left out."""
    if not rep.runs:
        lines = [f"No run with the paper's configuration is stored: run `minidb reproduce "
                 f"{rep.paper} --quick` (or without --quick for the paper's sizes)."]
    else:
        lines = ["Runs compared (the latest made with the paper's configuration):"]
        lines += [f"  {r['experiment']:26} run {r['run_id']}" for r in rep.runs]
    if rep.other_runs:
        lines.append(f"{rep.other_runs} other stored run(s) of this paper (other parameters, "
                     f"or older) are not compared; the explorer shows them.")
    return [*lines, ""]
