"""Command line: `grader check` (students), `grader run` (instructors), `validate` and `new` (authors)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from grader import __version__
from grader.errors import ExitCode, GraderError, SpecError, UsageError
from grader.exercise.seed_pool import DEFAULT_SIZE as DEFAULT_POOL_SIZE
from grader.exercise.settings import Settings
from grader.exercise.spec import SPEC_FILE, Exercise, discover_exercises, exercise_argument, load_exercise
from grader.exercise.trials import DEFAULT_SEED, secret_seed
from grader.report.terminal import safe
from grader.results import SubmissionResult
from grader.text import counted, plural

if TYPE_CHECKING:
    from grader.classrun import RunOutcome
    from grader.report.gradescope import Handout
    from grader.report.roster import Roster


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

    handout = commands.add_parser(
        "handout", help="write the exercises as students get them: no solution, no known-wrong files"
    )
    handout.add_argument("exercises", type=Path, nargs="+", help="exercise folders or folders of them")
    handout.add_argument("out", type=Path, help="a new (or empty) folder for the handout")

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

    Once torch is imported, tearing the interpreter down takes 0.3-0.7 s that nothing needs: by then every
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from grader.report.terminal import make_console

    console, errors = make_console(), make_console(stderr=True)
    try:
        if args.command in ("check", "repro"):
            return _check(args, console, errors)
        if args.command == "run":
            return _run(args, console, errors)
        if args.command == "report":
            return _report(args, console, errors)
        if args.command == "gradescope":
            return _gradescope(args, console, errors)
        if args.command == "new":
            return _new(args, console)
        if args.command == "prepare":
            return _prepare(args, console, errors)
        if args.command == "handout":
            return _handout(args, console)
        return _validate(args, console, errors)
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


def _warn_if_reduced(errors: Console) -> None:
    from grader.sandbox import isolation

    if isolation.current().reduced:
        errors.print(f"[yellow]{safe(isolation.current().description)}[/]")


def _check(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.exercise.settings import Settings
    from grader.exercise.trials import make_trial
    from grader.grading import grade, references_first
    from grader.handin.discover import submission_from_path
    from grader.report.json_report import to_json_line
    from grader.report.terminal import render_case, render_result

    replay = args.command == "repro"
    library = not replay and args.trial is None
    args.exercise = exercise_argument(args.exercise, library)
    if library and not (args.exercise / SPEC_FILE).is_file():
        return _check_library(args, console, errors)
    exercise = load_exercise(args.exercise, authoring=False)
    _warn_if_reduced(errors)
    cells = exercise.spec.notebook.selection
    submission = submission_from_path(args.file, exercise.spec.entry, notebook=cells, rule=exercise.file_rule)
    trials = None if replay else args.trials
    settings = Settings(args.seed, trials, args.trial)
    references = references_first([exercise], settings).get(exercise.id)
    result = grade(exercise, submission, args.seed, trials, only_trial=args.trial, references=references)
    if args.json:
        print(to_json_line(result))
    else:
        render_result(console, result, args.show_output)
        if replay:
            render_case(console, result, make_trial(exercise, args.seed, args.trial))
    return int(ExitCode.ALL_PASS if result.passed else ExitCode.SOME_FAILED)


def _check_library(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`grader check exercises/cs231n/a2 layers.py`: every exercise of a folder whose entry the file
    defines, as a student hands in a whole layers.py: the file imported once, in one worker for all
    (grading.grade_file); each result shown as soon as it and those before it are judged."""
    from grader.exercise.settings import Settings
    from grader.grading import iter_grade_file, references_first
    from grader.handin.discover import may_define, submission_from_path
    from grader.report.json_report import to_json_line
    from grader.report.terminal import render_result

    exercises, broken = _load_all(args.exercise, errors)
    _warn_if_reduced(errors)
    handed = [
        (
            e,
            submission_from_path(
                args.file, e.spec.entry, notebook=e.spec.notebook.selection, rule=e.file_rule
            ),
        )
        for e in exercises
    ]
    handed = [(e, s) for e, s in handed if may_define(s, e.spec.entry)]
    if not handed:
        entries = ", ".join(sorted({e.spec.entry for e in exercises}))
        raise UsageError(
            f"{args.file}: defines none of the functions the {counted(len(exercises), 'exercise')} under "
            f"{args.exercise} grade ({entries}); name your functions as the assignment does"
        )
    passed = True
    waiting: dict[int, SubmissionResult] = {}  # judged before one listed ahead of them (another worker's)
    shown = 0
    # Computed first, in a fork of the zygote that then serves the hand-in: the grader never imports torch.
    found = references_first([e for e, _ in handed], Settings(args.seed, args.trials, None))
    graded = iter_grade_file(handed, args.seed, args.trials, references_for=lambda e: found.get(e.id))
    for number, judged in graded:
        waiting[number] = judged
        while shown in waiting:
            result = waiting.pop(shown)
            shown += 1
            passed = passed and result.passed
            if args.json:
                print(to_json_line(result), flush=True)
            else:
                render_result(console, result, args.show_output)
    if broken:
        return int(ExitCode.USAGE_OR_SPEC)
    return int(ExitCode.ALL_PASS if passed else ExitCode.SOME_FAILED)


def _load_all(
    folder: Path, errors: Console, authoring: bool = False
) -> tuple[list[Exercise], list[GraderError]]:
    folders = discover_exercises(folder)
    if not folders:
        raise UsageError(f"{folder}: no exercises here (an exercise is a folder holding exercise.yaml)")
    loaded: list[Exercise] = []
    broken: list[GraderError] = []
    for path in folders:
        try:
            exercise = load_exercise(path, authoring)
            first = next((e for e in loaded if e.id == exercise.id), None)
            if first is not None:  # grades are kept by id: two exercises with one id would mix them
                message = f"this id is already the id of {first.root / SPEC_FILE}; give each exercise its own"
                raise SpecError(
                    exercise.root / SPEC_FILE, _id_line(exercise), "id", f"'{exercise.id}': {message}"
                )
            loaded.append(exercise)
        except SpecError as exc:
            broken.append(exc)
            errors.print(f"[bold red]spec error:[/] {safe(str(exc))} — this exercise is skipped")
    return loaded, broken


def _id_line(exercise: Exercise) -> int | None:
    lines = (exercise.root / SPEC_FILE).read_text(encoding="utf-8").splitlines()
    return next((number for number, line in enumerate(lines, 1) if line.startswith("id:")), None)


def _run(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.classrun import ClassRun, plan
    from grader.handin.discover import discover_students
    from grader.report.json_report import to_json_line

    roster = _roster(args)  # before grading: a bad roster should not cost a class's grading time
    exercises, broken = _load_all(args.exercises, errors)
    _warn_if_reduced(errors)
    folder = _submissions_folder(args)
    students = discover_students(folder)
    settings = _settings(args)  # one seed for the run: each exercise's references are computed once
    tasks = plan(exercises, students, settings)
    backend = None
    if args.cluster is not None:
        from grader.cluster import connect

        backend = connect(args.cluster)  # the class run closes it
    path = _gradebook_path(args, folder, errors)
    with ClassRun(path, " ".join(sys.argv), settings) as run:
        with _progress(errors, len(tasks), enabled=not args.json) as advance, _cache_unless(settings.secret):
            outcome = run.grade(tasks, args.jobs, lambda _: advance(), backend)
        graded_at = run.graded_at()
    if args.json:  # by student, then exercise, as the table: the same lines whatever finished first
        for result in outcome.results:
            print(to_json_line(result), flush=True)
    for exc in outcome.broken:
        errors.print(f"[bold red]spec error:[/] {safe(str(exc))} — this exercise is skipped")
    broken += outcome.broken
    graded = {r.exercise for r in outcome.results}  # not those whose graph failed on its own inputs
    shown = [e.id for e in exercises if e.id in graded]
    _finish(
        args, console, errors, list(outcome.results), shown, [name for name, _ in students], roster, graded_at
    )
    errors.print(
        f"[dim]{_run_counts(outcome, len(students), len(exercises))} (from the gradebook "
        f"{safe(str(path))}); {_seed_note(settings)}; submissions from {safe(str(folder))}[/]"
    )
    if outcome.interrupted:
        left = len(tasks) - outcome.graded - outcome.reused
        errors.print(f"[yellow]interrupted: {left} left to grade; run the same command again to finish[/]")
        return int(ExitCode.INTERRUPTED)
    if broken:
        return int(ExitCode.USAGE_OR_SPEC)
    return int(ExitCode.ALL_PASS if all(r.passed for r in outcome.results) else ExitCode.SOME_FAILED)


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _run_counts(outcome: RunOutcome, students: int, exercises: int) -> str:
    """Hand-ins counted apart from the (student, exercise) results: a library's exercises nobody hands in
    each have a result too, and counting those as graded told 414 graded where 35 hand-ins were."""
    unchanged = outcome.reused_handins
    results = len(outcome.results)
    nothing = results - outcome.graded_handins - unchanged
    pairs = f"{_counted(students, 'student')} × {_counted(exercises, 'exercise')}"
    return (
        f"{_counted(outcome.graded_handins, 'hand-in')} graded, {unchanged} unchanged since the last run; "
        f"{_counted(results, 'exercise result')} ({pairs}), {nothing} of them with nothing to grade (not "
        "handed in, or the hand-in unusable)"
    )


def _cache_unless(secret: bool) -> contextlib.AbstractContextManager[None]:
    """The reference cache off while grading with a secret seed: no later run draws that seed again, and
    each run would leave its references there for good (cs231n/a2: 12 files, 17 MB a run)."""
    return _cache_at("") if secret else contextlib.nullcontext()


def _settings(args: argparse.Namespace, trials: int | None = None) -> Settings:
    """The run's settings, resolved once: with no --seed, a secret seed drawn now for the whole run."""
    secret = args.seed is None
    return Settings(secret_seed() if secret else int(args.seed), trials or args.trials, secret=secret)


def _seed_note(settings: Settings) -> str:
    seed = settings.seed
    if not settings.secret:
        return f"seed {seed}"
    return (
        f"seed {seed} (secret, drawn for this run: the hand-ins graded now were graded with it, unchanged "
        f"ones keep the seed in their result; replay a trial with grader repro EXERCISE FILE --seed {seed} "
        "--trial T)"
    )


def _gradescope_seed_note(seed: int, secret: bool, pooled: bool) -> str:
    """The staff's line about a Gradescope submission's seed: who else sees it, and how to replay with it."""
    if not secret:
        return f"seed {seed}"
    replay = f"grader repro EXERCISE FILE --seed {seed} --trial T"
    if pooled:
        return (
            f"seed {seed} (secret, drawn for this submission from the pool: never shown to the student, who "
            f"would learn the pool's seeds submission after submission; replay a trial with {replay}, "
            "written below for each failing return)"
        )
    return (
        f"seed {seed} (secret, drawn for this submission: shown to the student, as it is used once; replay "
        f"a trial with {replay})"
    )


def _report(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.gradebook import Gradebook
    from grader.report.json_report import to_json_line

    folder = _submissions_folder(args)
    path = _gradebook_path(args, folder, errors)
    if not path.is_file():
        raise UsageError(f"{path}: no gradebook here yet (grader run writes it; --gradebook names another)")
    roster = _roster(args)
    gradebook = Gradebook(path)
    everything = gradebook.results()
    graded_at = gradebook.graded_at()
    gradebook.close()
    # The exercises of the folder named, in its order: a gradebook may hold another folder's grades too.
    exercises = [e.id for e in _load_all(args.exercises, errors)[0]]
    results = [r for r in everything if r.exercise in exercises]
    others = sorted({r.exercise for r in everything} - set(exercises))
    if others and not results:
        raise UsageError(
            f"{path}: holds grades for {', '.join(others)}, none of the exercises under {args.exercises}; "
            "name the exercises folder the class was graded on, or its gradebook with --gradebook"
        )
    if others:
        errors.print(
            f"[dim]not shown: grades for {safe(', '.join(others))}, not under {safe(str(args.exercises))}[/]"
        )
    if args.json:
        for result in results:
            print(to_json_line(result))
    exercises = [e for e in exercises if any(r.exercise == e for r in results)]
    students = sorted({r.student for r in results})
    _finish(args, console, errors, results, exercises, students, roster, graded_at)
    return int(ExitCode.ALL_PASS if all(r.passed for r in results) else ExitCode.SOME_FAILED)


def _roster(args: argparse.Namespace) -> Roster | None:
    from grader.report.roster import load_roster

    return None if args.roster is None else load_roster(args.roster)


def _finish(
    args: argparse.Namespace,
    console: Console,
    errors: Console,
    results: list[SubmissionResult],
    exercises: list[str],
    students: list[str],
    roster: Roster | None,
    graded_at: dict[tuple[str, str], str],
) -> None:
    from grader.report.exports import write_all
    from grader.report.terminal import render_class

    if roster is not None:
        # The roster's students first, in its order (those without a folder too: they are missing, not
        # absent from the class), then the folders it does not name, which are kept and reported.
        unknown = roster.not_on_roster(students)
        students = [*roster.folders(), *unknown]
    if not args.json:
        render_class(console, results, exercises, students)
    if roster is not None:
        graded = {r.student for r in results}
        no_folder = [s for s in roster.folders() if s not in graded]
        if no_folder:
            errors.print(
                f"[yellow]{counted(len(no_folder), 'student')} of the roster "
                f"{plural(len(no_folder), 'has')} no folder: "
                f"{safe(', '.join(no_folder))} — not handed in (empty cells, never 0)[/]"
            )
        if unknown:
            errors.print(
                f"[yellow]{safe(str(roster.path))}: {counted(len(unknown), 'folder')} "
                f"{plural(len(unknown), 'is')} "
                f"not on the roster: {safe(', '.join(unknown))} — in gradebook.csv but not in canvas.csv or "
                "moodle.csv; add them to the roster (folder,id,...) to export their grades[/]"
            )
    if args.out is not None:
        written = write_all(
            args.out,
            results,
            exercises,
            students,
            roster=roster,
            per_return=args.per_return,
            graded_at=graded_at,
        )
        # on stderr: with --json, stdout holds JSON lines only
        errors.print(f"[dim]wrote {counted(len(written), 'file')} to {safe(str(args.out))}[/]")
    if args.html is not None:
        from grader.report.html import INDEX, write_site

        pages = write_site(args.html, results, exercises, students)
        errors.print(f"[dim]wrote {counted(len(pages), 'page')} to {safe(str(args.html))} (open {INDEX})[/]")


def _gradescope(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Grade one student's hand-in on every exercise; Gradescope reads the results file, whatever happens.

    An exercise whose grading students see only later (`gradescope: {visible_trials: N}`) is graded once
    more on its first N trials: the preview they see at once. What went wrong on the autograder's side
    goes to stderr (the staff's log) in full, and to the student without its paths.
    """
    import json
    import tempfile

    import grader
    from grader.classrun import ClassRun, plan
    from grader.environment import installed_versions
    from grader.exercise import reference_cache
    from grader.jobs import Task
    from grader.report.gradescope import gradescope_results, handout

    def graded(tasks: list[Task], settings: Settings) -> tuple[list[SubmissionResult], list[GraderError]]:
        # One submission: nothing to keep between runs.
        kept = _references_in(pool) if pool is not None else _cache_unless(settings.secret)
        with (
            tempfile.TemporaryDirectory() as scratch,
            kept,
            ClassRun(Path(scratch) / "gradebook.sqlite", "gradescope", settings) as run,
        ):
            outcome = run.grade(tasks)
        for exc in outcome.broken:
            errors.print(f"[bold red]spec error:[/] {safe(str(exc))} — this exercise is skipped")
        return list(outcome.results), list(outcome.broken)

    args.results.parent.mkdir(parents=True, exist_ok=True)
    hand_in = [("submission", args.submission)]
    # One secret seed per submission (the preview's trials are its first N): answers recorded from one
    # submission's report are of no use in the next. The student sees it with the results, to replay.
    # With a pool (seed_pool.py), one of the seeds prepared with the image: no reference is computed here,
    # and the seed comes back in later submissions, so the student never sees it: the staff's log (this
    # stderr, which results.json's stdout_visibility keeps from the student) alone names it.
    secret = args.seed is None
    seed, pool = _gradescope_seed(args, errors) if secret else (int(args.seed), None)
    settings = Settings(seed, args.trials, secret=secret)
    errors.print(f"[dim]{_gradescope_seed_note(seed, secret, pool is not None)}[/]")
    places = (
        args.submission,
        args.exercises,
        Path("/autograder/source"),
        Path(grader.__file__).parent.parent,
    )
    private = {str(p) for place in places for p in (place, place.resolve()) if p.is_absolute()} | {sys.prefix}
    try:
        exercises, broken = _load_all(args.exercises, errors)
        tasks = plan(exercises, hand_in, settings)
        results, failed = graded(tasks, settings)
        broken += failed
        previews: dict[str, SubmissionResult] = {}
        counts = {e.id: e.spec.gradescope.visible_trials for e in exercises}
        for count in sorted({c for c in counts.values() if c is not None}):
            ahead = [e for e in exercises if counts[e.id] == count and count < settings.trial_count(e)]
            preview = replace(settings, trials=count)
            previews |= {r.exercise: r for r in graded(plan(ahead, hand_in, preview), preview)[0]}
            # The first N trials are the whole grading where it has no more: it is its own preview.
            previews |= {
                r.exercise: r for r in results if counts[r.exercise] == count and r.exercise not in previews
            }
        by_id = {task.exercise.id: task for task in tasks}
        handouts = {
            r.exercise: handout(
                by_id[r.exercise].exercise, by_id[r.exercise].submission, previews.get(r.exercise)
            )
            for r in results
        }
        notes = [
            f"autograder configuration error (not your fault): {counted(len(broken), 'exercise')} of this "
            "assignment could not be graded; the course staff has the details"
        ]
        output = gradescope_results(
            results, handouts, notes if broken else [], private, pool is None, installed_versions()
        )
        for command in _staff_replays(results, handouts):
            errors.print(f"[dim]replay (staff): {safe(command)}[/]")
        found, missed = reference_cache.asked()
        where = "from the pool" if pool is not None else "from the cache" if not secret else "(a fresh seed)"
        errors.print(f"[dim]references: {found} read back {where}, {missed} computed here[/]")
    except Exception:  # the student still gets a result, and the staff a reason
        output = {
            "score": 0,
            "output": "the autograder failed (not your fault; tell the staff)",
            "stdout_visibility": "hidden",  # the log below, the traceback and the seed: the staff's alone
            "extra_data": {"versions": installed_versions()},
        }
        errors.print(safe(traceback.format_exc()))
    args.results.write_text(json.dumps(output, indent=1), encoding="utf-8")
    console.print(f"wrote {safe(str(args.results))}: score {output['score']:g}")
    return int(ExitCode.ALL_PASS)


def _staff_replays(results: Sequence[SubmissionResult], handouts: Mapping[str, Handout]) -> list[str]:
    """What replays each failing return of a Gradescope submission, seed included (the staff's log): run
    where the exercises' folder and the student's file (downloaded from Gradescope) are."""
    commands: list[str] = []
    for result in results:
        file = shlex.quote(handouts[result.exercise].file or "SUBMISSION")
        where = f"{result.exercise} {file} --seed {result.seed}"
        trials = [r.case.trial for r in result.returns if r.case is not None]
        for failure in (result.error, result.first_trial_error):
            if failure is not None and failure.trial is not None:
                trials.append(failure.trial)
        commands += [f"grader repro {where} --trial {t}" for t in dict.fromkeys(trials)]
        if not result.passed and not trials:
            commands.append(f"grader check {where} --trials {result.trials}")
    return commands


def _prepare(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Store every exercise's references for the seed (or the pool's seeds) and trials a grading will use;
    one broken exercise is told and skipped, the others are prepared."""
    from grader.exercise import reference_cache, seed_pool
    from grader.exercise.preparation import Status, prepare

    pool = None
    if args.pool is not None:
        if args.seed is not None:
            raise UsageError("--seed and --pool: a pool draws its own secret seeds; give one or the other")
        seed_pool.make_folder(args.pool)
        pool = seed_pool.kept_or_new(args.pool, args.pool_size, args.trials)
    seeds = list(pool.seeds) if pool is not None else [DEFAULT_SEED if args.seed is None else args.seed]
    exercises, broken = _load_all(args.exercises, errors)
    counts = dict.fromkeys(Status, 0)
    with _references_in(args.pool):
        folder = reference_cache.cache_folder()
        if folder is None:
            off = f"the reference cache is off ({reference_cache.CACHE_ENV} is empty)"
            raise UsageError(f"{off}: nothing would keep the references; name a folder there, or --pool DIR")
        for exercise in exercises:
            for done in prepare(exercise, seeds, args.trials):
                counts[done.status] += 1
                # A pool's seeds are secret: named by their place in it, never printed.
                seed = f"seed {seeds.index(done.seed) + 1} of the pool" if pool else f"seed {done.seed}"
                what = f"{safe(done.exercise)}: {seed}, {counted(done.trials, 'trial')}:"
                if done.status is Status.FAILED:
                    errors.print(f"[bold red]{what} failed[/] — {safe(done.error)}")
                elif done.status is Status.COMPUTED:
                    console.print(f"{what} computed in {done.seconds:.1f} s")
                else:
                    console.print(f"[dim]{what} already stored[/]")
        if pool is not None:
            seed_pool.write_pool(folder, pool)  # last: a pool is only ever read whole
    failed = counts[Status.FAILED] + len(broken)
    console.print(
        f"{counts[Status.COMPUTED]} computed, {counts[Status.STORED]} already stored, {failed} failed; "
        f"in {safe(str(folder))}" + (f" (a pool of {len(seeds)} secret seeds)" if pool is not None else "")
    )
    return int(ExitCode.USAGE_OR_SPEC if failed else ExitCode.ALL_PASS)


def _references_in(folder: Path | None) -> contextlib.AbstractContextManager[None]:
    """References kept in `folder` (a pool's), where one is named; else in the reference cache as ever."""
    return contextlib.nullcontext() if folder is None else _cache_at(str(folder.resolve()))


@contextlib.contextmanager
def _cache_at(folder: str) -> Iterator[None]:
    """The reference cache in `folder` ("": off) for the block: read at each use (cache_folder)."""
    from grader.exercise.reference_cache import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = folder
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def _gradescope_seed(args: argparse.Namespace, errors: Console) -> tuple[int, Path | None]:
    """A secret seed for this submission: one of the pool's, with the pool's folder, where it has one that
    holds; else a fresh one (its references computed here), told in the staff's log."""
    if args.pool is None:
        return secret_seed(), None
    from grader.exercise.seed_pool import read_pool

    try:
        pool = read_pool(args.pool)
    except GraderError as exc:
        errors.print(f"[yellow]{safe(str(exc))} — a fresh secret seed instead: references computed here[/]")
        return secret_seed(), None
    if pool.trials != args.trials:
        prepared, wanted = (n or "(the exercises')" for n in (pool.trials, args.trials))
        errors.print(
            f"[yellow]the pool was prepared for --trials {prepared}, this grading runs --trials {wanted}: "
            "its references are computed here[/]"
        )
    errors.print(f"[dim]seed drawn from the pool of {len(pool.seeds)} in {safe(str(args.pool))}[/]")
    return pool.draw(), args.pool


def _submissions_folder(args: argparse.Namespace) -> Path:
    return Path(args.submissions or args.exercises.resolve().parent / "submissions")


def _gradebook_path(args: argparse.Namespace, submissions: Path, errors: Console) -> Path:
    from grader.gradebook import SHARED_NAME, default_path

    if args.gradebook is not None:
        return Path(args.gradebook)
    path = default_path(submissions)
    shared = path.parent / SHARED_NAME
    if shared.is_file() and not path.exists():
        errors.print(
            f"[yellow]note: {safe(str(shared))} is the gradebook grader 0.2 shared among every class "
            f"beside {safe(str(path.parent))}; this class's is {safe(str(path))} now (--gradebook "
            f"{safe(str(shared))} to keep using the old one)[/]"
        )
    return path


@contextlib.contextmanager
def _progress(errors: Console, total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """A progress bar with counts and ETA on a terminal's stderr; nothing elsewhere."""
    if not (enabled and errors.is_terminal):
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=errors, transient=True) as bar:
        task = bar.add_task("grading", total=total)
        yield lambda: bar.advance(task)


def _validate(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from grader.validation import validate

    exercises, broken = _load_all(args.exercises, errors, authoring=True)
    failed = False
    for exercise in exercises:
        console.print(f"[bold]{safe(exercise.id)}[/] — {safe(exercise.spec.title)}")
        try:
            checks = validate(exercise, args.seed, args.trials, jobs=args.jobs)
        except GraderError as exc:  # a graph that fails on its own inputs: the other exercises still run
            console.print(f"  [bold red]FAIL[/] {safe(str(exc))}")
            broken.append(exc)
            continue
        for check in checks:
            mark = "[green]ok[/]  " if check.ok else "[bold red]FAIL[/]"
            console.print(f"  {mark} {safe(check.name)}: {safe(check.detail)}")
            failed |= not check.ok
    if broken:
        return int(ExitCode.USAGE_OR_SPEC)
    return int(ExitCode.SOME_FAILED if failed else ExitCode.ALL_PASS)


def _handout(args: argparse.Namespace, console: Console) -> int:
    from grader.handout import README, write_handout

    written = write_handout(args.exercises, args.out)
    for exercise in written.exercises:
        where = exercise.folder if exercise.checkable else f"{exercise.starter} (graded by the course only)"
        console.print(f"  {safe(exercise.id)}: {safe(str(where))}")
    only = sum(not e.checkable for e in written.exercises)
    console.print(
        f"wrote {written.files} files to {safe(str(args.out))}: {len(written.exercises)} exercises"
        + (
            f" ({only} graded by the course only: their expected values come from reference code)"
            if only
            else ""
        )
        + "; no solution, reference or known-wrong file among them (each compared, by name and content)"
    )
    console.print(f"Students start with {safe(str(args.out / README))}: how to install and check their work")
    return int(ExitCode.ALL_PASS)


def _new(args: argparse.Namespace, console: Console) -> int:
    from grader import scaffold

    folder = args.dir / args.id
    for path in scaffold.create(folder):
        console.print(f"  created {safe(str(path))}")
    console.print(
        f'Next: edit {safe(str(folder / "exercise.yaml"))} (the README\'s "Writing an exercise" explains '
        "every field), the solution, the starter and the wrong/ files; then run:"
    )
    console.print(f"  [bold]grader validate {safe(str(folder))}[/]", soft_wrap=True)
    return int(ExitCode.ALL_PASS)


if __name__ == "__main__":
    sys.exit(main())
