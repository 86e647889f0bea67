"""Lecture 1 (lectures/lecture1_gamma): every link resolves, every figure it shows is one its
script draws, and the script runs (at a small scale, into a temporary directory).

Needs matplotlib (the ``labs`` extra).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LECTURE_DIR = ROOT / "lectures" / "lecture1_gamma"
LECTURE = LECTURE_DIR / "lecture1_gamma.md"
README = ROOT / "lectures" / "README.md"

# [text](target) and ![alt](target); the target stops at whitespace or ")"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links(markdown: Path) -> list[str]:
    return LINK.findall(markdown.read_text(encoding="utf-8"))


def local(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")


def make_figures():
    spec = importlib.util.spec_from_file_location("lecture1_make_figures",
                                                  LECTURE_DIR / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("markdown", [LECTURE, README], ids=lambda p: p.name)
def test_every_relative_link_points_to_an_existing_file(markdown):
    targets = [t for t in links(markdown) if local(t)]
    assert targets, f"{markdown.name} has no links"
    missing = [t for t in targets
               if not (markdown.parent / t.split("#", 1)[0]).resolve().exists()]
    assert not missing, f"{markdown.relative_to(ROOT)} links to missing files: {missing}"


def test_lecture_links_into_the_engine():
    targets = {(LECTURE_DIR / t).resolve() for t in links(LECTURE) if local(t)}
    for module in ("minidb/parallel/partitioners.py", "minidb/parallel/exchange.py",
                   "minidb/cluster/scheduler.py", "minidb/cost/model.py"):
        assert ROOT / module in targets, f"the lecture should link {module}"


def test_images_are_committed_and_drawn_by_the_script():
    images = [t for t in links(LECTURE) if t.endswith(".png")]
    assert images, "the lecture shows no figure"
    drawn = set(make_figures().FIGURES)
    for image in images:
        path = LECTURE_DIR / image
        assert path.parent == LECTURE_DIR / "figures", f"{image}: figures live in figures/"
        assert path.name in drawn, f"{image} is not drawn by make_figures.py"
        assert path.exists(), f"{image} is missing: run make_figures.py"
        assert path.stat().st_size < 400_000, f"{image} is too big to commit; lower its dpi"


def test_figure_script_runs_at_small_scale(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    module = make_figures()
    out = tmp_path / "figures"
    status = module.main(["--scale", "0.03", "--nodes", "1,2,4", "--page-sizes", "2048,8192",
                          "--out", str(out)])
    assert status == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(module.FIGURES)
    for name in written:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    printed = capsys.readouterr().out
    assert "gamma.0pct_indexed_slower_with_nodes" in printed  # the findings table
