"""Lecture 3 (lectures/lecture3_volcano): every link resolves, every figure it shows is one its
script draws and is committed, the script runs (small, into a temporary directory), every number
the lecture quotes from the paper is the reference data's, and every discussion question has an
answer in the instructor kit.

Needs matplotlib (the ``labs`` extra).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from minidb.experiments.findings import findings
from minidb.results import load_reference

ROOT = Path(__file__).resolve().parents[2]
LECTURE_DIR = ROOT / "lectures" / "lecture3_volcano"
LECTURE = LECTURE_DIR / "lecture3_volcano.md"
ANSWERS = ROOT / "instructors" / "lecture3_volcano" / "answers.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def text() -> str:
    return LECTURE.read_text(encoding="utf-8")


def local_links() -> list[str]:
    return [t for t in LINK.findall(text())
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def make_figures():
    spec = importlib.util.spec_from_file_location("lecture3_make_figures",
                                                  LECTURE_DIR / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def paper() -> dict[tuple[str, str, str, str], float]:
    return {(c["reference"], c["row"], c["column"], c["metric"]): c["value"]
            for c in load_reference("volcano").to_pylist() if c["value"] is not None}


def number(cell: str) -> float:
    """The first number of a table cell or a quote ("2,062", "120.0 (calibrated)", "1,346 s")."""
    found = NUMBER.search(cell)
    assert found, f"no number in {cell!r}"
    return float(found.group().replace(",", ""))


def table_rows(label: str) -> dict[str, list[float]]:
    """The rows of the lecture's markdown tables whose first cell ends with ``, <label>``:
    first cell without the suffix -> the numbers of the other cells."""
    out = {}
    for line in text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].endswith(f", {label}"):
            out[cells[0][: -len(label) - 2]] = [number(c) for c in cells[1:]]
    return out


def test_links_resolve_and_reach_the_engine():
    targets = local_links()
    missing = [t for t in targets if not (LECTURE_DIR / t.split("#", 1)[0]).resolve().exists()]
    assert not missing, f"lecture 3 links to missing files: {missing}"
    resolved = {(LECTURE_DIR / t).resolve() for t in targets}
    for module in ("volcano/records.py", "volcano/exchange.py", "volcano/unfix.py",
                   "volcano/pool.py", "volcano/psort.py", "cost/volcano_model.py",
                   "experiments/volcano.py", "experiments/volcano_findings.py",
                   "exec/iterator.py"):
        assert ROOT / "minidb" / module in resolved, f"link minidb/{module}"


def test_images_are_committed_and_drawn_by_the_script():
    images = {t for t in local_links() if t.endswith(".png")}
    drawn = set(make_figures().FIGURES)
    assert {Path(i).name for i in images} == drawn, "show every figure the script draws"
    for image in images:
        path = LECTURE_DIR / image
        assert path.parent == LECTURE_DIR / "figures" and path.name in drawn
        assert path.exists() and path.stat().st_size < 400_000, image


def test_figure_script_runs_at_small_scale(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.setenv("MINIDB_LECTURE_SCALE", "0.05")  # the scale comes from the environment
    module = make_figures()
    out = tmp_path / "figures"
    # 8 disks leave under three 32 KB clusters of sort space per process at this scale
    assert module.main(["--disks", "2,4,8", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(module.FIGURES)
    for name in module.FIGURES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    printed = capsys.readouterr().out
    assert "figures for 50,000 records" in printed
    assert "[8] disk(s) leave under three 32 KB clusters" in printed
    assert "cluster sizes [64] KB do not fit" in printed
    assert "parallel efficiency 2 -> 8 disks:" in printed and "(paper 88.78%)" in printed
    assert "unfix calls 150,000" in printed  # three unfixes per record, simple scheme
    assert re.search(r"tuning gain at 2 disks: x\d+\.\d\d \(paper x2\.16\)", printed)
    for f in findings("volcano"):
        assert f.name in printed, f"finding {f.name} not reported"


def test_a_scale_that_fits_no_disk_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        make_figures().main(["--scale", "0.01", "--disks", "16", "--out", str(tmp_path)])


@pytest.mark.parametrize(("label", "reference", "slug", "columns"), [
    ("Table II", "Table II",
     {"simple": "simple", "procedure [1]": "procedure_1", "macro [1]": "macro_1",
      "macro [4]": "macro_4", "macro [16]": "macro_16"},
     [(f"disks_{d}_{c}", m) for d in (8, 16) for c, m in
      (("time", "elapsed"), ("total_lock", "lock_hold_time"), ("total_wait", "lock_wait_time"))]),
    ("Table III", "Table III", {"1": "pools_1", "2": "pools_2"},
     [(f"disks_{d}_{c}", m) for d in (8, 16) for c, m in
      (("time", "elapsed"), ("total_lock", "lock_hold_time"), ("total_wait", "lock_wait_time"))]),
    ("Table V", "Table V", {"16 bytes": "align_16_bytes", "4 bytes": "align_4_bytes"},
     [(f"disks_{d}", "elapsed") for d in (2, 4, 8, 12, 16)]),
])
def test_paper_rows_of_the_tables_are_the_reference_data(label, reference, slug, columns):
    cells = paper()
    rows = {k: v for k, v in table_rows("paper").items() if k in slug}
    assert set(rows) == set(slug), f"{label}: the lecture lacks paper rows {set(slug) - set(rows)}"
    for name, values in rows.items():
        assert len(values) == len(columns), f"{label} {name}: {values}"
        for value, (column, metric) in zip(values, columns, strict=True):
            assert value == cells[(reference, slug[name], column, metric)], (
                f"{label} {name} {column}: the lecture says {value}")
    minidb = table_rows("minidb")
    assert all(name in minidb for name in slug), f"{label}: a minidb row beside each paper row"


# Numbers the lecture's prose quotes from the paper: the text as written, and the cell of each
# number in it, in order (None: a number that is not a cell, such as a multiplier).
F1, F4, T1, T4, S7 = "Figure 1", "Figure 4", "Table I", "Table IV", "Section 7"
QUOTES = [
    ("1,346 s", [(F1, "sort_initial", "disks_2", "elapsed")]),
    ("379 s", [(F1, "sort_initial", "disks_8", "elapsed")]),
    ("88.78%", [(F1, "sort_initial", "disks_2_to_8", "parallel_efficiency")]),
    ("above 300 s", [(F1, "sort_initial", "curve", "elapsed_floor")]),
    ("150-180 s", [(F4, "buffer_pool_lock", "range_low", "total_lock_hold_time"),
                   (F4, "buffer_pool_lock", "range_high", "total_lock_hold_time")]),
    ("3,000,000 unfix calls", [("Section 5", "buffer_unfix_calls", "na", "calls")]),
    ("near 240 s", [("Figure 2", "cluster_larger", "curve", "elapsed_floor")]),
    ("258.31 s became 261.364 s", [(T1, "sort12_io3_work15_mb", "disks_8", "elapsed"),
                                   (T1, "sort24_io6_work30_mb", "disks_8", "elapsed")]),
    ("242.62 s became 247.25 s", [(T1, "sort12_io3_work15_mb", "disks_16", "elapsed"),
                                  (T1, "sort24_io6_work30_mb", "disks_16", "elapsed")]),
    ("164.46 s became 163.34 s on 8 disks", [(T4, "affinity_off", "disks_8", "elapsed"),
                                             (T4, "affinity_on", "disks_8", "elapsed"), None]),
    ("88.86 s became 88.09 s on 16", [(T4, "affinity_off", "disks_16", "elapsed"),
                                      (T4, "affinity_on", "disks_16", "elapsed"), None]),
    ("15 x 4 ms = 60 ms", [None, None, ("Figure 6", "staggered_flush", "max_delay", "delay")]),
    ("used 2 ms", [("Figure 6", "staggered_flush", "chosen_step", "delay")]),
    ("12 bytes of padding", [("Section 6.3", "align_16_bytes", "na", "padding")]),
    ("close to 5%", [("Table V", "align_4_vs_16_bytes", "all_disks", "improvement")]),
    ("above 1.1 MB/s", [(S7, "sort_final", "disks_16", "throughput")]),
    ("323 KB/s", [(S7, "sort_initial", "disks_16", "throughput")]),
    ("93.15%", [(S7, "sort_final", "disks_2_to_16", "parallel_efficiency")]),
    ("about 3.6 times", [("Figure 7", "sort_final_vs_initial", "disks_16", "improvement_factor")]),
    ("16.6%", [(S7, "sort_final", "disks_16", "disk_bandwidth_utilization")]),
    ("15.8%", [(S7, "sort_final", "disks_16", "bus_bandwidth_utilization")]),
    ("about 57 s", [(S7, "gamma_sort_100mb", "processors_30", "elapsed")]),
    ("about 20 of the 84 s", [(S7, "read_ahead_write_behind", "disks_16", "estimated_saving"),
                              (S7, "sort_final", "disks_16", "elapsed")]),
]


@pytest.mark.parametrize(("quote", "cells"), QUOTES, ids=[q for q, _ in QUOTES])
def test_quoted_paper_numbers_are_the_reference_data(quote, cells):
    flat = " ".join(text().split())  # quotes may be broken over lines
    assert quote in flat, f"the lecture no longer says {quote!r}"
    numbers = [float(n.replace(",", "")) for n in NUMBER.findall(quote)]
    assert len(numbers) == len(cells), quote
    reference = paper()
    for value, cell in zip(numbers, cells, strict=True):
        assert cell is None or value == reference[cell], f"{quote}: {value} is not {cell}"


def test_failing_findings_are_explained():
    body = text().split("## 7.", 1)[1].split("## 8.", 1)[0]
    # the model's two known failures (tests/test_volcano_findings.py): the initial speedup, with
    # the handoff's share in it, and affinity (explained in 6.9, named in 7); and the finding the
    # per-record iterator cost (instr_next_call) made pass
    assert "Finding `volcano.initial_speedup_stalls` fails" in body
    assert "spin_transfers=0" in body
    assert "Finding `volcano.tuning_gain_low_parallelism` passes" in body
    assert "instr_next_call" in body
    for name in ("volcano.affinity_small_effect", "volcano.alignment_cancels_at_first",
                 "volcano.sixteen_pools_slightly_worse"):
        assert f"`{name}`" in body, f"say where {name} stands"
    before = text().split("### 6.10", 1)[0]
    assert "`volcano.staggering_flushes_little_effect`" in before
    assert "`volcano.affinity_small_effect` fails" in " ".join(before.split())


def test_every_question_has_an_answer():
    asked = re.findall(r"^(\d+)\. ", text().split("## Questions for discussion", 1)[1], re.M)
    answers = ANSWERS.read_text(encoding="utf-8")
    assert asked == ["1", "2", "3", "4", "5", "6"]
    assert all(re.search(rf"^### {n}\. ", answers, re.M) for n in asked)
