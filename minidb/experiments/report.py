"""Text layout of ``minidb report``: per paper, the runs compared, each table or figure with
reproduced and published values side by side and their ratio, then the findings as PASS / FAIL,
then a one-line summary; over several papers, a total line."""

from __future__ import annotations

from itertools import groupby

from minidb.experiments.reproduce import PaperReport, total_line


def _number(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def format_report(reports: list[PaperReport]) -> str:
    lines: list[str] = []
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
