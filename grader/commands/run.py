"""`grader run` (a class graded into its gradebook) and `grader report` (the gradebook shown again)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rich.console import Console

from grader.commands.outcome import Outcome
from grader.errors import UsageError
from grader.report.terminal import safe
from grader.text import counted

if TYPE_CHECKING:
    from grader.classrun import RunOutcome
from grader.commands.common import (
    finish,
    gradebook_path,
    load_all,
    progress,
    roster_of,
    run_settings,
    seed_note,
    submissions_folder,
    warn_if_reduced,
)


def run(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    from grader.classrun import ClassRun, plan
    from grader.handin.discover import discover_students
    from grader.report.json_report import to_json_line

    roster = roster_of(args)  # before grading: a bad roster should not cost a class's grading time
    exercises, broken = load_all(args.exercises, errors)
    warn_if_reduced(errors)
    folder = submissions_folder(args)
    students = discover_students(folder)
    settings = run_settings(args)  # one seed for the run: each exercise's references are computed once
    tasks = plan(exercises, students, settings)
    backend = None
    if args.cluster is not None:
        from grader.cluster import connect

        backend = connect(args.cluster)  # the class run closes it
    path = gradebook_path(args, folder, errors)
    with ClassRun(path, " ".join(sys.argv), settings) as run:
        with progress(errors, len(tasks), enabled=not args.json) as advance:
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
    finish(
        args, console, errors, list(outcome.results), shown, [name for name, _ in students], roster, graded_at
    )
    errors.print(
        f"[dim]{_run_counts(outcome, len(students), len(exercises))} (from the gradebook "
        f"{safe(str(path))}); {seed_note(settings)}; submissions from {safe(str(folder))}[/]"
    )
    if outcome.interrupted:
        left = len(tasks) - outcome.graded - outcome.reused
        errors.print(f"[yellow]interrupted: {left} left to grade; run the same command again to finish[/]")
        return Outcome.INTERRUPTED
    return Outcome.of((r.passed for r in outcome.results), broken=bool(broken))


def _run_counts(outcome: RunOutcome, students: int, exercises: int) -> str:
    """Hand-ins counted apart from the (student, exercise) results: a library's exercises nobody hands in
    each have a result too, and counting those as graded told 414 graded where 35 hand-ins were."""
    unchanged = outcome.reused_handins
    results = len(outcome.results)
    nothing = results - outcome.graded_handins - unchanged
    pairs = f"{counted(students, 'student')} × {counted(exercises, 'exercise')}"
    return (
        f"{counted(outcome.graded_handins, 'hand-in')} graded, {unchanged} unchanged since the last run; "
        f"{counted(results, 'exercise result')} ({pairs}), {nothing} of them with nothing to grade (not "
        "handed in, or the hand-in unusable)"
    )


def report(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    from grader.gradebook import Gradebook
    from grader.report.json_report import to_json_line

    folder = submissions_folder(args)
    path = gradebook_path(args, folder, errors)
    if not path.is_file():
        raise UsageError(f"{path}: no gradebook here yet (grader run writes it; --gradebook names another)")
    roster = roster_of(args)
    gradebook = Gradebook(path)
    everything = gradebook.results()
    graded_at = gradebook.graded_at()
    gradebook.close()
    # The exercises of the folder named, in its order: a gradebook may hold another folder's grades too.
    exercises = [e.id for e in load_all(args.exercises, errors)[0]]
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
    finish(args, console, errors, results, exercises, students, roster, graded_at)
    return Outcome.of(r.passed for r in results)
