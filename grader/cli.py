"""Command line: `grader check` (students), `grader run` (instructors), `validate` and `new` (authors)."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from grader import __version__
from grader.errors import ExitCode, GraderError, SpecError
from grader.results import SubmissionResult
from grader.spec import Exercise, discover_exercises, load_exercise
from grader.trials import DEFAULT_SEED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grader",
        description="Grade gradient exercises: which returns and entries are wrong, and whether it is "
        "rounding (precision), an unstable formula (instability), or a real mistake (logic).",
    )
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--seed", type=int, default=DEFAULT_SEED, help=f"trial seed (default {DEFAULT_SEED})"
        )
        sub.add_argument("--trials", type=_positive, help="number of trials (default: the exercise's)")

    check = commands.add_parser("check", help="grade one file against one exercise (students)")
    check.add_argument("exercise", type=Path, help="exercise folder (holding exercise.yaml)")
    check.add_argument("file", type=Path, help="your .py file (or a folder of .py files)")
    common(check)
    check.add_argument("--trial", type=_non_negative, help="run only this trial (to replay a failure)")
    check.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    check.add_argument("--show-output", action="store_true", help="show what your code printed")

    run = commands.add_parser("run", help="grade a class: every student on every exercise (instructors)")
    run.add_argument("exercises", type=Path, help="folder of exercise folders")
    run.add_argument(
        "--submissions",
        type=Path,
        help="folder with one sub-folder (or .py file) per student "
        "(default: 'submissions' beside the exercises folder)",
    )
    common(run)
    run.add_argument("-j", "--jobs", type=_positive, default=os.cpu_count() or 1, help="parallel workers")
    run.add_argument("--json", action="store_true", help="print one JSON object per (student, exercise)")

    validate = commands.add_parser(
        "validate", help="check exercises: gradients, reference, known-wrong files"
    )
    validate.add_argument("exercises", type=Path, help="an exercise folder or a folder of them")
    common(validate)

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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from grader.report.terminal import make_console

    console, errors = make_console(), make_console(stderr=True)
    try:
        if args.command == "check":
            return _check(args, console, errors)
        if args.command == "run":
            return _run(args, console, errors)
        if args.command == "new":
            return _new(args, console)
        return _validate(args, console, errors)
    except GraderError as exc:
        errors.print(f"[bold red]error:[/] {escape(str(exc))}")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        errors.print("interrupted")
        return 130
    except Exception:
        errors.print("[bold red]internal error in the grader[/] (not your fault; please report it):")
        errors.print(escape(traceback.format_exc()))
        return int(ExitCode.INTERNAL)


def _warn_if_reduced(errors: Console) -> None:
    from grader import isolation

    if isolation.current().reduced:
        errors.print(f"[yellow]{escape(isolation.current().description)}[/]")


def _check(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.grading import grade
    from grader.report.json_report import to_json_line
    from grader.report.terminal import render_result
    from grader.submissions import submission_from_path

    exercise = load_exercise(args.exercise)
    _warn_if_reduced(errors)
    submission = submission_from_path(args.file, exercise.spec.entry)
    result = grade(exercise, submission, args.seed, args.trials, only_trial=args.trial)
    if args.json:
        print(to_json_line(result))
    else:
        render_result(console, result, args.show_output)
    return int(ExitCode.ALL_PASS if result.passed else ExitCode.SOME_FAILED)


def _load_all(folder: Path, errors: Console) -> tuple[list[Exercise], list[GraderError]]:
    folders = discover_exercises(folder)
    if not folders:
        raise GraderError(f"{folder}: no exercises here (an exercise is a folder holding exercise.yaml)")
    loaded: list[Exercise] = []
    broken: list[GraderError] = []
    for path in folders:
        try:
            loaded.append(load_exercise(path))
        except SpecError as exc:
            broken.append(exc)
            errors.print(f"[bold red]spec error:[/] {escape(str(exc))} — this exercise is skipped")
    return loaded, broken


def _run(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.grading import grade, not_runnable
    from grader.reference import References, compute_references
    from grader.report.json_report import to_json_line
    from grader.report.terminal import render_class
    from grader.submissions import discover_students, may_define, submission_from_path
    from grader.trials import make_trials

    exercises, broken = _load_all(args.exercises, errors)
    _warn_if_reduced(errors)
    folder = args.submissions or args.exercises.resolve().parent / "submissions"
    students = discover_students(folder)
    jobs = []
    for exercise in list(exercises):
        trials = make_trials(exercise, args.seed, args.trials or exercise.spec.trials)
        try:
            references = compute_references(exercise, trials)
        except GraderError as exc:  # its graph fails on its own inputs: grade the other exercises
            errors.print(f"[bold red]spec error:[/] {escape(str(exc))} — this exercise is skipped")
            broken.append(exc)
            exercises.remove(exercise)
            continue
        for name, path in students:
            jobs.append((exercise, name, path, references))

    def one(job: tuple[Exercise, str, Path, References]) -> SubmissionResult:
        exercise, name, path, references = job
        entry = exercise.spec.entry
        try:
            submission = submission_from_path(path, entry, name)
        except GraderError as exc:  # this student's hand-in is unusable; the others are still graded
            return not_runnable(exercise, name, path, args.seed, references, str(exc))
        if not may_define(submission, entry):  # no need to start a worker to learn that
            message = f"not handed in: none of the files defines {entry}()"
            return not_runnable(exercise, name, path, args.seed, references, message, kind="not-submitted")
        return grade(exercise, submission, args.seed, references=references)

    results: list[SubmissionResult] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(one, jobs):
            results.append(result)
            if args.json:
                print(to_json_line(result), flush=True)
    if not args.json:
        render_class(console, results, [e.id for e in exercises], [name for name, _ in students])
        console.print(f"[dim]seed {args.seed}; submissions from {escape(str(folder))}[/]")
    if broken:
        return int(ExitCode.USAGE_OR_SPEC)
    return int(ExitCode.ALL_PASS if all(r.passed for r in results) else ExitCode.SOME_FAILED)


def _validate(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.validation import validate

    exercises, broken = _load_all(args.exercises, errors)
    failed = False
    for exercise in exercises:
        console.print(f"[bold]{escape(exercise.id)}[/] — {escape(exercise.spec.title)}")
        try:
            checks = validate(exercise, args.seed, args.trials)
        except GraderError as exc:  # a graph that fails on its own inputs: the other exercises still run
            console.print(f"  [bold red]FAIL[/] {escape(str(exc))}")
            broken.append(exc)
            continue
        for check in checks:
            mark = "[green]ok[/]  " if check.ok else "[bold red]FAIL[/]"
            console.print(f"  {mark} {escape(check.name)}: {escape(check.detail)}")
            failed |= not check.ok
    if broken:
        return int(ExitCode.USAGE_OR_SPEC)
    return int(ExitCode.SOME_FAILED if failed else ExitCode.ALL_PASS)


def _new(args: argparse.Namespace, console: Console) -> int:
    from grader import scaffold

    folder = args.dir / args.id
    for path in scaffold.create(folder):
        console.print(f"  created {escape(str(path))}")
    console.print(
        f"Next: edit {escape(str(folder / 'exercise.yaml'))} (the README's \"Writing an exercise\" explains "
        "every field), the solution, the starter and the wrong/ files; then run:"
    )
    console.print(f"  [bold]grader validate {escape(str(folder))}[/]", soft_wrap=True)
    return int(ExitCode.ALL_PASS)


if __name__ == "__main__":
    sys.exit(main())
