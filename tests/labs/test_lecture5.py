"""Lecture 5 (lectures/lecture5_commit): every link resolves, every figure it shows is one its
script draws and is committed, the script runs (small, into a temporary directory), and every
discussion question has an answer in the instructor kit.

Needs matplotlib (the ``labs`` extra).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LECTURE_DIR = ROOT / "lectures" / "lecture5_commit"
LECTURE = LECTURE_DIR / "lecture5_commit.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def local_links() -> list[str]:
    return [t for t in LINK.findall(LECTURE.read_text(encoding="utf-8"))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def make_figures():
    spec = importlib.util.spec_from_file_location("lecture5_make_figures",
                                                  LECTURE_DIR / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_links_resolve_and_reach_the_engine():
    targets = local_links()
    missing = [t for t in targets if not (LECTURE_DIR / t.split("#", 1)[0]).resolve().exists()]
    assert not missing, f"lecture 5 links to missing files: {missing}"
    resolved = {(LECTURE_DIR / t).resolve() for t in targets}
    for module in ("log.py", "undo.py", "two_phase.py"):
        assert ROOT / "minidb" / "txn" / module in resolved, f"link minidb/txn/{module}"
    for module in ("base.py", "simnet.py", "two_pc.py", "presumed_abort.py",
                   "presumed_commit.py", "three_pc.py", "group_commit.py", "matrix.py"):
        assert ROOT / "minidb" / "txn" / "commit" / module in resolved, \
            f"link minidb/txn/commit/{module}"


def test_images_are_committed_and_drawn_by_the_script():
    images = {t for t in local_links() if t.endswith(".png")}
    assert len(images) == 5
    drawn = set(make_figures().FIGURES)
    for image in images:
        path = LECTURE_DIR / image
        assert path.parent == LECTURE_DIR / "figures" and path.name in drawn
        assert path.exists() and path.stat().st_size < 400_000, image


def test_figure_script_runs_at_small_scale(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    module = make_figures()
    out = tmp_path / "figures"
    assert module.main(["--rows", "2000", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(module.FIGURES)
    for name in module.FIGURES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    printed = capsys.readouterr().out
    assert printed.count("recovery undone") == 5 and "recovery redone, 0 pages" in printed
    assert "2pc: commit with 3 participants 12 messages, 7 forces" in printed
    assert "presumed_abort: commit with 3 participants 12 messages, 7 forces (1 at the " \
           "coordinator); abort 9 messages, 2 forces" in printed
    assert "2pc: 8 coordinator steps, in doubt at each: [0, 1, 2, 3, 3, 2, 1, 0]" in printed
    assert "3pc: 11 coordinator steps, in doubt at each: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]" \
        in printed
    assert "fault matrix, 3pc: 108 runs, 0 broke a promise, 0 left someone in doubt" in printed
    assert "group_commit: coordinator forces per commit 0.25 (all at once)" in printed


def test_every_question_has_an_answer():
    text = LECTURE.read_text(encoding="utf-8")
    asked = re.findall(r"^(\d+)\. ", text.split("## Questions for discussion", 1)[1], re.M)
    answers = (ROOT / "instructors" / "lecture5_commit" / "answers.md").read_text()
    assert asked == ["1", "2", "3", "4", "5"]
    assert all(re.search(rf"^### {n}\. ", answers, re.M) for n in asked)
