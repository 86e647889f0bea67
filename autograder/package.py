"""The Gradescope bundle of an assignment: ``setup.sh``, ``run_autograder`` and the sources.

Gradescope unpacks the bundle into ``/autograder/source`` and runs ``setup.sh`` once, as root,
when it builds the image; then, for each submission, it copies the student's files to
``/autograder/submission``, runs ``/autograder/run_autograder`` and reads
``/autograder/results/results.json``.

``setup.sh`` installs minidb (editable, so its code stays in the source folder, and without its
dependencies) into a virtual environment outside that folder, then only what grading imports,
listed in the bundle's ``requirements-grader.txt`` (``GRADER_NEEDS``, with pyproject's versions:
numpy, pyarrow and sqlglot, which ``import minidb`` loads, and click for the command line; not
Ray, DuckDB or the labs' and explorer's packages), then makes the folder readable by root only:
submissions run under other user ids and must not read the grader, the hidden cases or
minidb's solutions.
``run_autograder`` grades ``/autograder/submission`` and, should Python not even start, still
writes a valid results file. Both honour two variables for trying the bundle outside
Gradescope: ``AUTOGRADER_DIR`` (instead of ``/autograder``) and ``MINIDB_GRADER_PYTHON``.

The bundle holds the instructor's sources, hidden cases included, but not the reference
solutions, which grading does not need.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

from autograder.release import SKIPPED_NAMES, SOURCE_ROOT, prepare_output_dir
from autograder.sandbox import AutograderError

BUNDLED = ("minidb", "autograder", "pyproject.toml", "README.md")
VENV = "/opt/minidb-grader"
# the distributions grading imports (``import minidb`` loads pyarrow and sqlglot; the command
# line is click); tests/autograder/test_package_bundle.py grades in a venv holding only these
GRADER_NEEDS = ("numpy", "pyarrow", "sqlglot", "click")
REQUIREMENTS = "requirements-grader.txt"

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image.
set -euo pipefail
SOURCE="${{AUTOGRADER_DIR:-/autograder}}/source"
VENV="${{MINIDB_GRADER_VENV:-{VENV}}}"

python=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    python="$(command -v "$candidate")"
    break
  fi
done
if [ -z "$python" ]; then  # minidb needs Python 3.11 or newer
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv
  python="$(command -v python3.11)"
fi
"$python" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# minidb itself without its dependencies, then only what grading imports (not Ray, DuckDB...)
"$VENV/bin/python" -m pip install --quiet --no-deps -e "$SOURCE"
"$VENV/bin/python" -m pip install --quiet -r "$SOURCE/{REQUIREMENTS}"
# Submissions run under other user ids: they must not read the grader, the hidden cases or
# minidb's solutions. The virtual environment stays readable, so they can run Python.
chmod -R go-rwx "$SOURCE"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this, as root, for every submission.
set -u
AUTOGRADER="${{AUTOGRADER_DIR:-/autograder}}"
PYTHON="${{MINIDB_GRADER_PYTHON:-{venv}/bin/python}}"
RESULTS="$AUTOGRADER/results/results.json"
mkdir -p "$AUTOGRADER/results"
cd "$AUTOGRADER/source" || exit 1
"$PYTHON" -m autograder grade {name} --submission "$AUTOGRADER/submission" --results "$RESULTS"
status=$?
if [ ! -s "$RESULTS" ]; then  # the grader did not even start: Gradescope still needs an answer
  printf '{{"score": 0, "output": "The autograder could not start (status %s); your instructor can see why in its log.", "stdout_visibility": "hidden", "tests": []}}\\n' "$status" > "$RESULTS"
fi
exit 0
"""


def make_package(name: str, out: str | Path, force: bool = False,
                 source: Path = SOURCE_ROOT) -> Path:
    """Write the Gradescope bundle of assignment ``name`` to ``out`` (a .zip file or a folder)."""
    from autograder.assignments import module

    module(name)  # an unknown name is a one-line error
    if not (source / "autograder" / "assignments" / name / "hidden").is_dir():
        raise AutograderError(f"{name} has no hidden cases here: package from the instructor's "
                              "tree, not from a student release")
    out = Path(out).resolve()
    files = {"setup.sh": SETUP_SH, "run_autograder": RUN_AUTOGRADER.format(name=name, venv=VENV),
             REQUIREMENTS: grader_requirements(source)}
    sources = list(_sources(source))
    if out.suffix == ".zip":
        if out.exists() and not force:
            raise AutograderError(f"{out} exists; pass --force to replace it")
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for rel, text in files.items():
                info = zipfile.ZipInfo(rel)
                info.external_attr = (0o100755 if rel != REQUIREMENTS else 0o100644) << 16
                z.writestr(info, text)
            for path, rel in sources:
                z.write(path, rel)
        return out
    prepare_output_dir(out, force)
    for rel, text in files.items():
        (out / rel).write_text(text)
        os.chmod(out / rel, 0o755 if rel != REQUIREMENTS else 0o644)
    for path, rel in sources:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out / rel)
    return out


def grader_requirements(source: Path = SOURCE_ROOT) -> str:
    """``requirements-grader.txt``: the ``GRADER_NEEDS`` entries of pyproject's dependencies,
    with their version bounds."""
    import re
    import tomllib

    deps = tomllib.loads((source / "pyproject.toml").read_text())["project"]["dependencies"]
    by_name = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower(): d for d in deps}
    missing = [n for n in GRADER_NEEDS if n not in by_name]
    if missing:
        raise AutograderError(f"pyproject.toml does not list {', '.join(missing)}, which "
                              "grading needs")
    lines = ["# what grading imports (autograder/package.py, GRADER_NEEDS)"]
    return "\n".join(lines + [by_name[n] for n in GRADER_NEEDS]) + "\n"


def _sources(source: Path):
    """(path, path in the bundle) for every file the grader needs."""
    for name in BUNDLED:
        top = source / name
        if top.is_file():
            yield top, name
            continue
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(source)
            if any(p in SKIPPED_NAMES or p.endswith(".egg-info") for p in rel.parts):
                continue
            if path.suffix in (".pyc", ".pyo") or path.is_symlink() or not path.is_file():
                continue
            parts = rel.parts
            if len(parts) >= 4 and parts[:2] == ("autograder", "assignments") and parts[3] == "reference":
                continue
            if parts[-1] == "expected_public.json":
                continue  # only a student release grades from recorded answers
            yield path, rel.as_posix()
