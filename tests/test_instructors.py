"""The instructor kit (``instructors/``): the slides build from each lecture with one slide per
section, every lab and lecture question has an answer, the rubric adds up to 100 with written
answers in it, the term plan names the five papers, and the student release leaves it out."""

from __future__ import annotations

import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "instructors"
LAB1 = ROOT / "labs" / "lab1_gamma" / "lab1_gamma.py"
LECTURE1 = ROOT / "lectures" / "lecture1_gamma" / "lecture1_gamma.md"


def _build_slides():
    spec = importlib.util.spec_from_file_location("build_slides", KIT / "build_slides.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Slides(HTMLParser):
    """Counts reveal.js's top-level slides (outer ``<section>``s) and their headings."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.slides = 0
        self.titles: list[str] = []
        self._heading = False

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "section":
            self.depth += 1
            if self.depth == 1:
                self.slides += 1
                self.titles.append("")
        elif tag in ("h1", "h2") and self.depth:
            self._heading = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.depth -= 1
        elif tag in ("h1", "h2"):
            self._heading = False

    def handle_data(self, data: str) -> None:
        if self._heading and self.titles and not self.titles[-1]:
            self.titles[-1] = data.strip()


def numbered_questions(script: Path) -> list[int]:
    """The numbers of a lab's numbered questions (``# 10. ...`` in markdown cells)."""
    found = re.findall(r"^#\s{1,3}(\d+)\. \S", script.read_text(), re.M)
    return sorted({int(n) for n in found})


def test_every_lecture_builds_into_one_slide_per_section(tmp_path):
    pytest.importorskip("nbconvert")
    slides = _build_slides()
    assert slides.lectures(), "no lecture found"
    assert slides.main(["--out", str(tmp_path)]) == 0
    for lecture in slides.lectures():
        html = (tmp_path / f"{lecture.stem}.slides.html").read_text()
        parsed = _Slides()
        parsed.feed(html)
        sections = slides.section_titles(lecture.read_text())
        assert parsed.slides == len(sections) >= 5
        assert parsed.titles == sections
        assert "data:image/png;base64" in html  # the figures travel inside the file


def test_a_missing_lecture_is_refused(tmp_path, capsys):
    assert _build_slides().main(["--out", str(tmp_path), str(tmp_path / "none.md")]) == 2
    assert "no lecture at" in capsys.readouterr().err


def test_every_lab1_question_has_an_answer_and_rubric_points():
    questions = numbered_questions(LAB1)
    assert questions == list(range(1, 18))
    answers = (KIT / "lab1_gamma" / "answers.md").read_text()
    rubric = (KIT / "lab1_gamma" / "rubric.md").read_text()
    for n in questions:
        assert re.search(rf"^### Q{n}\. ", answers, re.M), f"no answer to question {n}"
        assert re.search(rf"^\| Q{n} \| \d+ \|", rubric, re.M), f"question {n} not in the rubric"
    assert "Clock by hand" in answers and "equal-width ranges on `skewed`" in answers


def test_rubric_gives_100_points_with_written_answers():
    rubric = (KIT / "lab1_gamma" / "rubric.md").read_text()
    items = {m[0]: int(m[1]) for m in re.findall(r"^\| ([^|]+?) \| (\d+) \|", rubric, re.M)}
    code = {k: v for k, v in items.items() if k.startswith("Part")}
    assert sum(items.values()) == 100
    assert 0 < sum(code.values()) < 100  # not all code: written answers carry points


def test_every_lecture_question_has_an_answer():
    text = LECTURE1.read_text()
    asked = re.findall(r"^(\d+)\. ", text.split("## Questions for discussion", 1)[1], re.M)
    answers = (KIT / "lecture1_gamma" / "answers.md").read_text()
    assert asked and all(re.search(rf"^### {n}\. ", answers, re.M) for n in asked)


def test_term_plan_names_five_papers_and_claims_nothing_missing():
    plan = (KIT / "term_plan.md").read_text()
    for topic in ("Gamma", "joins", "Volcano", "LH*", "transactions"):
        assert topic in plan
    # every lecture and lab exists now: the plan must not call one missing
    assert "not written yet" not in plan and "Prerequisites" in plan


def test_the_student_release_leaves_the_kit_out(tmp_path):
    from autograder.release import INCLUDED, make_release

    assert "instructors" not in INCLUDED
    out = tmp_path / "student"
    make_release(out)
    assert not (out / "instructors").exists()
    assert not any("answers.md" == p.name or "rubric.md" == p.name for p in out.rglob("*"))


def test_every_lab3_question_has_an_answer():
    lab = (ROOT / "labs" / "lab3_volcano" / "lab3_volcano.py").read_text()
    asked = re.findall(r"\*\*Question ([A-Z]\d)\.\*\*", lab)
    answers = (KIT / "lab3_volcano" / "answers.md").read_text()
    assert asked == ["A1", "B1", "C1", "D1", "E1", "F1", "F2", "H1"]
    for q in asked:
        assert re.search(rf"^### {q}\. ", answers, re.M), f"no answer to question {q}"


def test_every_lab4_question_has_an_answer():
    lab = (ROOT / "labs" / "lab4_lhstar" / "lab4_lhstar.py").read_text()
    asked = re.findall(r"\*\*Question ([A-Z]\d)\.\*\*", lab)
    answers = (KIT / "lab4_lhstar" / "answers.md").read_text()
    assert asked == ["A1", "B1", "C1", "D1", "E1", "G1", "G2", "G3"]
    for q in asked:
        assert re.search(rf"^### {q}\. ", answers, re.M), f"no answer to question {q}"


def test_every_lab2_question_has_an_answer():
    lab = (ROOT / "labs" / "lab2_joins" / "lab2_joins.py").read_text()
    asked = re.findall(r"\*\*Question ([A-Z]\d)\.\*\*", lab)
    answers = (KIT / "lab2_joins" / "answers.md").read_text()
    assert asked == ["B1", "B2", "C1", "C2", "D1"]
    for q in asked:
        assert re.search(rf"^### {q}\. ", answers, re.M), f"no answer to question {q}"
