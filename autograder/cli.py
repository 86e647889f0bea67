"""``python -m autograder``: grade a submission, package for Gradescope, make the student release.

    python -m autograder grade lab1 --submission DIR --results results.json
    python -m autograder package lab1 --out bundle.zip        (or --out DIR)
    python -m autograder release --out DIR [--force]
    python -m autograder submit lab1 --out submission.zip    (checks, then zips your files)

A mistake in the call (unknown assignment, missing submission folder, non-empty output folder)
prints one line on stderr and exits with status 2; ``grade`` still writes its results file then.
A graded submission exits 0 whatever its score.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from autograder.sandbox import Limits
from minidb.errors import MinidbError

DEFAULT = Limits()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Grade minidb lab submissions, build Gradescope bundles and student releases."""


@main.command()
@click.argument("assignment")
@click.option("--submission", type=click.Path(path_type=Path), required=True,
              help="Folder holding the student's files.")
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where to write Gradescope's results.json.")
@click.option("--wall", type=float, default=DEFAULT.wall_s, show_default=True,
              help="Wall-clock seconds for importing the submission, and for each case "
                   "(on a loaded machine, stretched by the load per core, at most 5 times).")
@click.option("--cpu", type=float, default=DEFAULT.cpu_s, show_default=True,
              help="CPU seconds for each case (and for importing the submission).")
@click.option("--memory", type=int, default=DEFAULT.memory_mb, show_default=True,
              help="Memory (address space) of each child process, in MB.")
@click.option("--output", type=float, default=DEFAULT.output_mb, show_default=True,
              help="Largest file (its output included) a child may write, in MB.")
@click.option("--user", default="auto", show_default=True,
              help="When run as root: the account submissions run as, or 'auto' for a user id "
                   "of their own.")
def grade(assignment: str, submission: Path, results: Path, wall: float, cpu: float,
          memory: int, output: float, user: str) -> None:
    """Grade the SUBMISSION folder for ASSIGNMENT and write RESULTS."""
    from autograder.grading import grade_to_file

    limits = Limits(wall_s=wall, cpu_s=cpu, memory_mb=memory, output_mb=output)
    graded = grade_to_file(assignment, submission, results, limits=limits, user=user, log=_say)
    _say(f"wrote {results}: {graded.score:g} / {graded.max_score:g}")


def _say(line: str) -> None:
    """Print a line of the log; when stdout is a closed pipe (``| head``), print no more."""
    try:
        click.echo(str(line).encode("utf-8", "backslashreplace").decode("utf-8"))
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # so that flushing at exit is quiet too
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@main.command()
@click.argument("assignment")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="A .zip file, or a folder, for the Gradescope bundle.")
@click.option("--force", is_flag=True, help="Replace an existing zip or a non-empty folder.")
def package(assignment: str, out: Path, force: bool) -> None:
    """Build the Gradescope bundle of ASSIGNMENT (setup.sh, run_autograder, sources)."""
    from autograder.package import make_package

    click.echo(f"wrote the Gradescope bundle of {assignment} to {make_package(assignment, out, force)}")


@main.command()
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="An empty folder for the student release.")
@click.option("--force", is_flag=True, help="Empty a non-empty --out folder first.")
def release(out: Path, force: bool) -> None:
    """Copy the project into OUT with every solution block replaced by a stub."""
    from autograder.release import make_release

    click.echo(make_release(out, force).describe())


@main.command()
@click.argument("assignment")
@click.option("--out", type=click.Path(path_type=Path), default=Path("submission.zip"),
              show_default=True, help="The .zip file to write (the file you upload).")
@click.option("--from", "lab_dir", type=click.Path(path_type=Path), default=None,
              help="The folder holding your files (default: the lab's folder, e.g. "
                   "labs/lab1_gamma).")
def submit(assignment: str, out: Path, lab_dir: Path | None) -> None:
    """Check your files for ASSIGNMENT on the public cases, then zip them for upload."""
    from autograder.local import submit as make_submission

    make_submission(assignment, out, lab_dir, show=_say)


def run(argv: list[str] | None = None) -> int:
    """Run the command line; user mistakes become one line on stderr and status 2."""
    try:
        main.main(args=argv, prog_name="python -m autograder", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.Abort:
        click.echo("autograder: stopped", err=True)
        return 1
    except click.ClickException as err:
        click.echo(f"autograder: error: {err.format_message()}", err=True)
        return 2
    except MinidbError as err:
        click.echo(f"autograder: error: {err}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(run())
