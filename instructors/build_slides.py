"""Build reveal.js slides for every lecture from its markdown: one command, no hand-written HTML.

    python instructors/build_slides.py                   # every lectures/*/lecture*.md
    python instructors/build_slides.py --out /tmp/slides lectures/lecture1_gamma/lecture1_gamma.md

The lecture's markdown is read by jupytext (cells split at every heading), each ``#`` or ``##``
section becomes one slide and each ``###`` subsection a vertical sub-slide under it, and
nbconvert's reveal.js exporter writes ``<out>/<lecture>.slides.html`` with the lecture's figures
embedded (base64), so the file can be mailed or put on a course page alone. Viewing it loads
reveal.js from its CDN; for a lecture hall without network pass ``--reveal-prefix`` the URL of a
local copy of reveal.js.

Needs the ``labs`` extra (jupytext, nbconvert). The test suite builds every lecture into a
temporary folder and checks one slide per section (``tests/test_instructors.py``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LECTURES = ROOT / "lectures"
DEFAULT_OUT = ROOT / "instructors" / "slides"
SECTION = re.compile(r"^(#{1,2}) \S")
SUBSECTION = re.compile(r"^### \S")


def lectures() -> list[Path]:
    """Every lecture's markdown file, in order (``lectures/lectureN_*/lectureN_*.md``)."""
    return sorted(LECTURES.glob("lecture*/lecture*.md"))


def section_titles(markdown: str) -> list[str]:
    """The ``#`` and ``##`` headings of ``markdown`` outside fenced code: one slide each."""
    titles, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and SECTION.match(line):
            titles.append(line.lstrip("#").strip())
    return titles


def lecture_notebook(path: Path):
    """The lecture as a notebook whose cells carry reveal.js slide types: ``slide`` for a cell
    that opens a ``#`` / ``##`` section, ``subslide`` for a ``###`` one, ``-`` (same slide)
    for the rest."""
    import jupytext

    notebook = jupytext.reads(path.read_text(encoding="utf-8"),
                              fmt={"extension": ".md", "format_name": "markdown",
                                   "split_at_heading": True})
    for cell in notebook.cells:
        first = cell.source.lstrip("\n").split("\n", 1)[0] if cell.cell_type == "markdown" else ""
        kind = "slide" if SECTION.match(first) else "subslide" if SUBSECTION.match(first) else "-"
        cell.metadata["slideshow"] = {"slide_type": kind}
    return notebook


def build(path: Path, out: Path, reveal_prefix: str | None = None) -> Path:
    """Write the slides of the lecture at ``path`` into ``out``; returns the HTML file."""
    from nbconvert import SlidesExporter

    exporter = SlidesExporter(embed_images=True, exclude_input_prompt=True,
                              exclude_output_prompt=True)
    if reveal_prefix:
        exporter.reveal_url_prefix = reveal_prefix
    html, _ = exporter.from_notebook_node(
        lecture_notebook(path), resources={"metadata": {"path": str(path.parent),
                                                        "name": path.stem}})
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{path.stem}.slides.html"
    target.write_text(html, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lectures", nargs="*", type=Path,
                        help="lecture markdown files (default: every lecture)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder for the HTML files (default: {DEFAULT_OUT})")
    parser.add_argument("--reveal-prefix", help="URL of reveal.js (default: its CDN)")
    args = parser.parse_args(argv)
    for path in args.lectures or lectures():
        if not path.is_file():
            print(f"build_slides: no lecture at {path}", file=sys.stderr)
            return 2
        target = build(path, args.out, args.reveal_prefix)
        count = len(section_titles(path.read_text(encoding="utf-8")))
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {count} "
              f"slides -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
