"""Command line: `grader check` (students), `grader run` (instructors), `validate` and `new` (authors)."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from grader import __version__
from grader.commands.outcome import Outcome
from grader.errors import ExitCode, GraderError
from grader.exercise.seed_pool import DEFAULT_SIZE as DEFAULT_POOL_SIZE
from grader.exercise.trials import DEFAULT_SEED
from grader.report.terminal import safe

if TYPE_CHECKING:
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grader",
        description="Grade gradient exercises: which returns and entries are wrong, and whether it is "
        "rounding (precision), an unstable formula (instability), or a real mistake (logic).",
    )
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sub: argparse.ArgumentParser, secret: bool = False) -> None:
        # A grading that counts draws a secret seed: with a known one, a hand-in could be a table of
        # that seed's answers. --seed S replays such a run (its seed is in every result).
        sub.add_argument(
            "--seed",
            type=_non_negative,
            default=None if secret else DEFAULT_SEED,
            help="trial seed (default: a secret one, drawn from the OS for this grading and recorded in "
            "each result)"
            if secret
            else f"trial seed (default {DEFAULT_SEED})",
        )
        sub.add_argument("--trials", type=_positive, help="number of trials (default: the exercise's)")

    def gradebook_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--gradebook",
            type=Path,
            help="the SQLite gradebook (default: beside the submissions folder, named after it: "
            "submissions.gradebook.sqlite)",
        )
        sub.add_argument(
            "--out",
            type=Path,
            help="write gradebook.csv, students/<student>/results.json (Gradescope), summary.json; "
            "with --roster also canvas.csv and moodle.csv",
        )
        sub.add_argument(
            "--html",
            type=Path,
            help="write a self-contained site (DIR/index.html: the class table, each exercise's verdicts, "
            "failing entries and misconceptions; a page per student) to open offline",
        )
        sub.add_argument(
            "--roster",
            type=Path,
            help="CSV of the class as the LMS knows it: folder,id,name,email (header row); its students "
            "without a folder show as not handed in",
        )
        sub.add_argument(
            "--per-return",
            action="store_true",
            help="in the CSV exports, one column per return of each exercise as well",
        )

    check = commands.add_parser("check", help="grade one file against one exercise (students)")
    check.add_argument(
        "exercise",
        type=Path,
        help="exercise folder (holding exercise.yaml), or a folder of them: every exercise the file defines; "
        "or an exercise's id, found below the current folder (and $GRADER_EXERCISES)",
    )
    check.add_argument("file", type=Path, help="your .py file (or a folder of .py files)")
    common(check)
    check.add_argument("--trial", type=_non_negative, help="run only this trial (to replay a failure)")
    check.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    check.add_argument("--show-output", action="store_true", help="show what your code printed")

    repro = commands.add_parser("repro", help="replay one trial and show it whole: inputs, expected, got")
    repro.add_argument(
        "exercise", type=Path, help="exercise folder (holding exercise.yaml), or its id (as for check)"
    )
    repro.add_argument("file", type=Path, help="your .py file (or a folder of .py files)")
    repro.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"trial seed (default {DEFAULT_SEED})")
    repro.add_argument("--trial", type=_non_negative, required=True, help="the trial to replay")
    repro.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    repro.add_argument("--show-output", action="store_true", help="show what your code printed")

    run = commands.add_parser("run", help="grade a class: every student on every exercise (instructors)")
    run.add_argument("exercises", type=Path, help="folder of exercise folders")
    run.add_argument(
        "--submissions",
        type=Path,
        help="folder with one sub-folder (or .py file) per student "
        "(default: 'submissions' beside the exercises folder)",
    )
    common(run, secret=True)
    run.add_argument("-j", "--jobs", type=_positive, default=os.cpu_count() or 1, help="parallel workers")
    run.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="grade on a Dask cluster instead: its scheduler's tcp://HOST:PORT, or local:N to start N "
        "worker processes here (needs `pip install gradient-grader[dask]`; -j is then ignored)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object per (student, exercise)")
    gradebook_options(run)

    report = commands.add_parser("report", help="show the gradebook's results again, and export them")
    report.add_argument("exercises", type=Path, help="folder of exercise folders (locates the gradebook)")
    report.add_argument("--submissions", type=Path, help="the class folder (default: beside the exercises)")
    report.add_argument("--json", action="store_true", help="print one JSON object per (student, exercise)")
    gradebook_options(report)

    validate = commands.add_parser(
        "validate", help="check exercises: gradients, reference, known-wrong files"
    )
    validate.add_argument("exercises", type=Path, help="an exercise folder or a folder of them")
    validate.add_argument(
        "-j", "--jobs", type=_positive, default=os.cpu_count() or 1, help="files graded at once"
    )
    common(validate)

    gradescope = commands.add_parser(
        "gradescope", help="inside Gradescope: grade /autograder/submission, write results.json"
    )
    gradescope.add_argument("exercises", type=Path, help="an exercise folder or a folder of them")
    gradescope.add_argument(
        "--submission", type=Path, default=Path("/autograder/submission"), help="the student's files"
    )
    gradescope.add_argument(
        "--results",
        type=Path,
        default=Path("/autograder/results/results.json"),
        help="where Gradescope reads the results",
    )
    common(gradescope, secret=True)

    gradescope.add_argument(
        "--pool",
        type=Path,
        metavar="DIR",
        help="draw each submission's secret seed from the pool `grader prepare --pool DIR` made (its "
        "references are stored there: the submission computes none); default: a fresh secret seed",
    )

    prepare = commands.add_parser(
        "prepare", help="compute and store exercises' references ahead: the gradings then compute none"
    )
    prepare.add_argument("exercises", type=Path, help="an exercise folder or a folder of them")
    prepare.add_argument(
        "--seed",
        type=_non_negative,
        help=f"the seed the gradings will use (default {DEFAULT_SEED}: grader check's; grader run's --seed)",
    )
    prepare.add_argument("--trials", type=_positive, help="number of trials (default: the exercise's)")
    prepare.add_argument(
        "--pool",
        type=Path,
        metavar="DIR",
        help="draw --pool-size secret seeds instead, and store them and their references in DIR, a "
        "folder of this user's alone, for grader gradescope --pool DIR (a Gradescope image's build)",
    )
    prepare.add_argument(
        "--pool-size",
        type=_positive,
        default=DEFAULT_POOL_SIZE,
        help=f"seeds in the pool (default {DEFAULT_POOL_SIZE})",
    )
    prepare.add_argument(
        "--ship",
        action="store_true",
        help="also write the references of grader check's default trials beside each exercise "
        "(references/), to travel with the exercise folder to students (grader handout does this itself)",
    )

    handout = commands.add_parser(
        "handout", help="write the exercises as students get them: no solution, no known-wrong files"
    )
    handout.add_argument("exercises", type=Path, nargs="+", help="exercise folders or folders of them")
    handout.add_argument("out", type=Path, help="a new (or empty) folder for the handout")
    handout.add_argument(
        "--no-references",
        dest="references",
        action="store_false",
        help="leave out the references of grader check's default trials (a smaller handout: CS231n A2's "
        "are 17 MB; each student's first check then computes them, importing torch)",
    )

    new = commands.add_parser("new", help="start a new exercise from a template that validates (authors)")
    new.add_argument("id", help="the exercise's id: its folder's name")
    new.add_argument(
        "--dir", type=Path, default=Path("exercises"), help="where the folder goes (default: exercises)"
    )
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def entry() -> None:
    """The `grader` command: `main()`, then out of the process without the interpreter's teardown.

    Once torch is imported, tearing the interpreter down takes time that nothing needs: by then every
    result is committed, every file written and closed, and the warm workers are stopped here.
    """
    code = main()
    from grader.report.terminal import make_console
    from grader.sandbox.warm import close_shared_pool

    close_shared_pool()
    _report_leftovers(make_console(stderr=True))  # the slots of the zygotes stopped just now
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _command(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    from grader.commands import authoring, check, gradescope, prepare, run

    if args.command in ("check", "repro"):
        return check.check(args, console, errors)
    if args.command == "run":
        return run.run(args, console, errors)
    if args.command == "report":
        return run.report(args, console, errors)
    if args.command == "gradescope":
        return gradescope.gradescope(args, console, errors)
    if args.command == "new":
        return authoring.new(args, console)
    if args.command == "prepare":
        return prepare.prepare(args, console, errors)
    if args.command == "handout":
        return authoring.handout(args, console)
    return authoring.validate(args, console, errors)


# The one place an outcome becomes an exit code (errors carry theirs: GraderError.exit_code).
_EXIT = {
    Outcome.PASSED: ExitCode.ALL_PASS,
    Outcome.FAILED: ExitCode.SOME_FAILED,
    Outcome.BROKEN: ExitCode.USAGE_OR_SPEC,
    Outcome.INTERRUPTED: ExitCode.INTERRUPTED,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from grader.report.terminal import make_console

    console, errors = make_console(), make_console(stderr=True)
    try:
        return int(_EXIT[_command(args, console, errors)])
    except GraderError as exc:
        errors.print(f"[bold red]error:[/] {safe(str(exc))}")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        errors.print("interrupted")
        return int(ExitCode.INTERRUPTED)
    except Exception:
        errors.print("[bold red]internal error in the grader[/] (not your fault; please report it):")
        errors.print(safe(traceback.format_exc()))
        return int(ExitCode.INTERNAL)
    finally:
        _report_leftovers(errors)


def _report_leftovers(errors: Console) -> None:
    """What hand-ins left that could not be removed within its bounds (sandbox/removal.py): each once, as
    a warning; it stops nothing, this grader or a later one."""
    from grader.sandbox import removal

    for left in removal.take_noted():
        errors.print(f"[yellow]warning: {safe(left.describe())}[/]")


if __name__ == "__main__":
    sys.exit(main())
