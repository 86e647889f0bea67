"""The student release: the project as students get it, with every solution block stubbed.

``python -m autograder release --out DIR`` copies, from the instructor's tree, everything the
README and the handouts point to: the minidb package, ``labs/``, ``lectures/``, ``app/`` (the
explorer, ``minidb app``), ``datasets/`` (the papers' published tables, which minidb's results
module and the labs read), ``docs/``, ``benchmarks/``, the autograder (without any assignment's
``hidden/`` cases and ``reference/`` solutions), ``pyproject.toml`` and ``README.md``. The
release's ``tests/`` is ``tests/release/`` (the public cases, graded as the grader does, and
checks that the project starts), not the instructor's suite; its ``.ci/run`` and the section
the README starts with (what is left out and why) come from ``autograder/student_release/``.
On the way every solution block (see ``markers``) in a Python file or in a code cell of a
notebook under those folders is replaced by a stub raising ``NotImplementedYet``; jupytext
``py:percent`` scripts are Python files, so they are handled like any other. Each assignment
may add files (lab 1 adds the reference's answers on its public traces, since the release's
own Clock is a stub).

Before it is done the release checks itself: no marker text is left in any file, and every
Python file compiles. Caches, checkpoints and build leftovers are not copied.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from autograder.markers import MarkerError, has_marker_text, strip_notebook, strip_solutions
from autograder.sandbox import AutograderError

SOURCE_ROOT = Path(__file__).resolve().parent.parent
INCLUDED = ("minidb", "labs", "lectures", "app", "datasets", "docs", "benchmarks", "autograder",
            "pyproject.toml", "README.md")
RELEASE_TESTS = "tests/release"  # becomes the release's tests/
RELEASE_FILES = Path(__file__).resolve().parent / "student_release"  # .ci/run, README section
SKIPPED_NAMES = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache", ".DS_Store"}
PRIVATE_DIRS = ("hidden", "reference")  # under autograder/assignments/NAME/


@dataclass
class ReleaseReport:
    out: Path
    files: int = 0
    stubbed: dict[str, int] = field(default_factory=dict)  # file -> solution blocks replaced
    left_out: list[str] = field(default_factory=list)

    def describe(self) -> str:
        blocks = sum(self.stubbed.values())
        lines = [f"wrote the student release to {self.out}: {self.files} files, {blocks} solution "
                 f"block(s) stubbed in {len(self.stubbed)} file(s)"]
        lines += [f"  {name}: {n}" for name, n in sorted(self.stubbed.items())]
        lines += [f"  left out: {item}" for item in self.left_out]
        return "\n".join(lines)


def make_release(out: str | Path, force: bool = False, source: Path = SOURCE_ROOT) -> ReleaseReport:
    """Write the student release of ``source`` into ``out`` (empty, or emptied with ``force``)."""
    out = Path(out).resolve()
    source = source.resolve()
    _check_minidb_is(source)
    prepare_output_dir(out, force, source)
    report = ReleaseReport(out)
    for name in INCLUDED:
        path = source / name
        if not path.exists():
            report.left_out.append(f"{name} (not in the source tree)")
            continue
        if path.is_file():
            _copy_file(path, out / name, name, report)
            continue
        for item in sorted(path.rglob("*")):
            rel = item.relative_to(source)
            if _skipped(rel):
                continue
            if item.is_symlink():
                report.left_out.append(f"{rel.as_posix()} (a symbolic link)")
            elif item.is_file():
                _copy_file(item, out / rel, rel.as_posix(), report)
    report.left_out += [f"{p.relative_to(source).as_posix()}/ (instructors only)"
                        for p in sorted((source / "autograder" / "assignments").glob("*/*"))
                        if p.is_dir() and p.name in PRIVATE_DIRS]
    _add_release_files(source, out, report)
    _add_assignment_files(out, report)
    _check(out)
    return report


def prepare_output_dir(out: Path, force: bool, source: Path | None = None) -> None:
    """Make ``out`` an empty directory: refuse a non-empty one unless ``force``, and never one
    that holds (or lies inside the copied parts of) the source tree."""
    if out.exists() and not out.is_dir():
        raise AutograderError(f"{out} exists and is not a directory; choose another --out")
    if source is not None:
        if out == source or out in source.parents:
            raise AutograderError(f"{out} holds the source tree itself; choose another --out")
        for name in INCLUDED:
            if out == source / name or (source / name) in out.parents:
                raise AutograderError(f"{out} is inside {name}/, which the release copies; "
                                      "choose a directory outside it")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise AutograderError(f"{out} is not empty; choose an empty directory or pass --force "
                                  "to replace its contents")
        for child in out.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _add_release_files(source: Path, out: Path, report: ReleaseReport) -> None:
    """The release's own ``tests/`` (from ``tests/release/``), ``.ci/run``, and the README's
    first section, which says what the release leaves out and why."""
    tests = source / RELEASE_TESTS
    if tests.is_dir():
        for item in sorted(tests.rglob("*")):
            rel = item.relative_to(tests)
            if item.is_file() and not _skipped(Path("tests") / rel):
                _copy_file(item, out / "tests" / rel, f"tests/{rel.as_posix()}", report)
    else:
        report.left_out.append(f"{RELEASE_TESTS} (not in the source tree)")
    report.left_out.append("tests/ (the instructor's suite; the release has its own)")
    ci = out / ".ci" / "run"
    ci.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RELEASE_FILES / "ci_run", ci)
    os.chmod(ci, 0o755)
    report.files += 1
    readme = out / "README.md"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8")
        title, _, rest = text.partition("\n")
        section = (RELEASE_FILES / "README.md").read_text(encoding="utf-8")
        readme.write_text(f"{title}\n\n{section}{rest.lstrip(chr(10))}", encoding="utf-8")


def _skipped(rel: Path) -> bool:
    parts = rel.parts
    if any(p in SKIPPED_NAMES or p.endswith(".egg-info") for p in parts):
        return True
    if parts[:2] == ("autograder", "student_release"):
        return True  # placed where they belong by _add_release_files
    if rel.suffix in (".pyc", ".pyo"):
        return True
    return len(parts) >= 4 and parts[:2] == ("autograder", "assignments") and parts[3] in PRIVATE_DIRS


def _copy_file(path: Path, target: Path, rel: str, report: ReleaseReport) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    report.files += 1
    if path.suffix in (".py", ".ipynb"):
        text = path.read_text(encoding="utf-8")
        strip = strip_notebook if path.suffix == ".ipynb" else strip_solutions
        text, count = strip(text, rel)
        if count:
            report.stubbed[rel] = count
        target.write_text(text, encoding="utf-8")
        shutil.copymode(path, target)
    else:
        shutil.copy2(path, target)


def _add_assignment_files(out: Path, report: ReleaseReport) -> None:
    from autograder.assignments import NAMES, module

    for name in NAMES:
        for rel, text in module(name).release_files().items():
            target = out / "autograder" / "assignments" / name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            report.files += 1


def _check(out: Path) -> None:
    """No marker text anywhere, and every Python file compiles."""
    for path in sorted(out.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = path.relative_to(out).as_posix()
        if has_marker_text(text):
            raise MarkerError(f"{rel} still holds solution marker text after the release; "
                              "markers are only replaced in .py files and notebook code cells")
        if path.suffix == ".py":
            try:
                compile(text, rel, "exec", dont_inherit=True)
            except SyntaxError as exc:
                raise MarkerError(f"{rel}, line {exc.lineno}: the released file does not compile "
                                  f"({exc.msg}); check the solution block around it") from None


def _check_minidb_is(source: Path) -> None:
    """The release records answers of the reference code: it must be the tree being released."""
    import minidb

    imported = Path(minidb.__file__).resolve().parent
    if imported != source / "minidb":
        raise AutograderError(f"this process imports minidb from {imported}, not from the tree "
                              f"being released ({source}); run the release from that tree")
