"""`grader gradescope`: one submission graded inside Gradescope's autograder, results.json written whatever
happens.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from grader.commands.outcome import Outcome
from grader.errors import GraderError
from grader.exercise.settings import Settings
from grader.exercise.trials import secret_seed
from grader.report.terminal import safe
from grader.results import SubmissionResult
from grader.text import counted

if TYPE_CHECKING:
    from grader.report.gradescope import ShownExercise
from grader.commands.common import load_all, run_settings


def gradescope(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
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
    from grader.report.gradescope import gradescope_results, shown_exercise

    def graded(tasks: list[Task], settings: Settings) -> tuple[list[SubmissionResult], list[GraderError]]:
        # One submission: nothing to keep between runs.
        with (
            tempfile.TemporaryDirectory() as scratch,
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
    drawn, pool = _gradescope_seed(args, errors) if args.seed is None else (None, None)
    settings = run_settings(args, drawn, pool)  # the pool's folder holds its references
    seed, secret = settings.seed, settings.secret
    errors.print(f"[dim]{_gradescope_seed_note(seed, secret, pool is not None)}[/]")
    places = (
        args.submission,
        args.exercises,
        Path("/autograder/source"),
        Path(grader.__file__).parent.parent,
    )
    private = {str(p) for place in places for p in (place, place.resolve()) if p.is_absolute()} | {sys.prefix}
    try:
        exercises, broken = load_all(args.exercises, errors)
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
            r.exercise: shown_exercise(
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
    return Outcome.PASSED  # Gradescope reads results.json, whatever happened


def _staff_replays(results: Sequence[SubmissionResult], handouts: Mapping[str, ShownExercise]) -> list[str]:
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
