"""`grader check` and `grader repro`: one student's hand-in, on one exercise or every exercise of a folder
its file defines.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console

from grader.commands.outcome import Outcome
from grader.errors import UsageError
from grader.exercise.spec import SPEC_FILE, exercise_argument, load_exercise
from grader.results import SubmissionResult
from grader.text import counted

if TYPE_CHECKING:
    from grader.exercise.spec import Exercise
    from grader.handin.prepare import Submission
from grader.commands.common import load_all, run_settings, warn_if_reduced


def check(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    from grader.exercise.trials import make_trial
    from grader.grading import grade, references_first
    from grader.handin.discover import submission_from_path
    from grader.report.json_report import to_json_line
    from grader.report.terminal import render_case, render_result

    replay = args.command == "repro"
    library = not replay and args.trial is None
    args.exercise = exercise_argument(args.exercise, library)
    if library and not (args.exercise / SPEC_FILE).is_file():
        return check_library(args, console, errors)
    exercise = load_exercise(args.exercise, authoring=False)
    warn_if_reduced(errors)
    cells = exercise.spec.notebook.selection
    submission = submission_from_path(args.file, exercise.spec.entry, notebook=cells, rule=exercise.file_rule)
    settings = run_settings(args)
    references = references_first([exercise], settings, deferred=torch_free(submission, [exercise]))(exercise)
    result = grade(exercise, submission, settings, references=references)
    if args.json:
        print(to_json_line(result))
    else:
        render_result(console, result, args.show_output)
        if replay:
            render_case(console, result, make_trial(exercise, settings.seed, args.trial))
    return Outcome.of([result.passed])


def torch_free(submission: Submission, exercises: list[Exercise]) -> bool:
    """Whether the hand-in's worker goes without torch (torch_use.py): its references' spreads are then
    computed where judging needs them, in a zygote of their own (grading.references_first)."""
    from grader.handin.prepare import prepare
    from grader.sandbox import torch_use

    return not torch_use.needed(prepare(submission), exercises)


def check_library(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    """`grader check exercises/cs231n/a2 layers.py`: every exercise of a folder whose entry the file
    defines, as a student hands in a whole layers.py: the file imported once, in one worker for all
    (grading.grade_file); each result shown as soon as it and those before it are judged."""
    from grader.grading import iter_grade_file, references_first, sandbox_ahead
    from grader.handin.discover import may_define, submission_from_path
    from grader.report.json_report import to_json_line
    from grader.report.terminal import render_result

    exercises, broken = load_all(args.exercise, errors)
    warn_if_reduced(errors)
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
    passed: list[bool] = []
    waiting: dict[int, SubmissionResult] = {}  # judged before one listed ahead of them (another worker's)
    shown = 0
    # Computed first, in a fork of the zygote that then serves the hand-in: the grader never imports torch.
    settings = run_settings(args)
    sandbox_ahead(handed)
    chosen = [e for e, _ in handed]
    found = references_first(chosen, settings, deferred=torch_free(handed[0][1], chosen))
    graded = iter_grade_file(handed, settings, references_for=found)
    for number, judged in graded:
        waiting[number] = judged
        while shown in waiting:
            result = waiting.pop(shown)
            shown += 1
            passed.append(result.passed)
            if args.json:
                print(to_json_line(result), flush=True)
            else:
                render_result(console, result, args.show_output)
    return Outcome.of(passed, broken=bool(broken))
