"""The documents a user is pointed to are in the project, and nothing points outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEARCHED = ("minidb", "labs", "lectures", "autograder", "app", "datasets", "tests", "benchmarks",
            "docs", "instructors", "README.md")
SUFFIXES = {".py", ".md", ".ipynb", ".csv", ".toml", ".txt"}
OUTSIDE = re.compile(r"FACTS\.md|shared/papers|\.\./shared|/work/shared")
DOC_PATH = re.compile(r"docs/[a-z_]+\.md")


def project_files() -> list[Path]:
    """Every text file of the project that a user may read."""
    files = []
    for name in SEARCHED:
        path = ROOT / name
        candidates = [path] if path.is_file() else path.rglob("*")
        files += [p for p in candidates if p.is_file() and p.suffix in SUFFIXES
                  and "__pycache__" not in p.parts and p != Path(__file__).resolve()]
    return files


def test_no_file_points_outside_the_project():
    offenders = [f"{p.relative_to(ROOT)}: {m.group()}" for p in project_files()
                 for m in OUTSIDE.finditer(p.read_text(errors="replace"))]
    assert offenders == []


def test_every_cited_document_exists():
    cited = {m.group() for p in project_files()
             for m in DOC_PATH.finditer(p.read_text(errors="replace"))}
    assert {"docs/facts.md", "docs/papers.md"} <= cited
    assert [c for c in sorted(cited) if not (ROOT / c).is_file()] == []


def test_relative_links_between_documents_resolve():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).is_file(), f"{doc.name} links to missing {target}"


def test_reference_row_counts_in_datasets_readme_match_the_files():
    """datasets/README.md's table gives each reference CSV's row count (header excluded)."""
    import csv

    listed = re.findall(r"^\| `([a-z0-9_]+\.csv)` \| (\d+) \|", (ROOT / "datasets" / "README.md")
                        .read_text(), flags=re.MULTILINE)
    assert listed
    wrong = []
    for name, count in listed:
        with open(ROOT / "datasets" / "reference" / name, newline="") as f:
            rows = sum(1 for _ in csv.reader(f)) - 1
        if rows != int(count):
            wrong.append(f"{name}: README says {count}, the file has {rows}")
    assert wrong == []
