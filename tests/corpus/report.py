"""Grade every corpus variant and print the separation table.

    .venv/bin/python tests/corpus/report.py [EXERCISE ...] [--correct-trials N] [--other-trials N]

One row per variant: its kind and precision, then per return the verdict, the worst ratio of error to
rounding envelope over all trials (`max_envelope_ratio`) and the precision the grader inferred. Per
exercise: the largest ratio reached by a correct variant (it must stay below 1) and the smallest
worst-trial ratio of a bug variant on the returns its bug affects (the margin by which the bug is seen).
Rows whose verdicts contradict the manifest are marked with `!` and explained below the table; correct
variants told that their formula is unstable (which the tests allow) are marked with `?`.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for test_corpus

from test_corpus import (
    OTHER_TRIALS,
    ROOT,
    Variant,
    corpus_exercises,
    exercise_folder,
    grade_variants,
    load_manifest,
    problems,
    trials_for,
)

from grader.report.json_report import ResultOut, result_model
from grader.results import SubmissionResult

SHORT = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16"}

REPORT_CORRECT_TRIALS = 10_000  # the measurement behind docs/verdicts.md's table


def ratio_text(value: float | None) -> str:
    return "inf/nan" if value is None else f"{value:.3g}"


@dataclass
class Margins:
    """Per exercise: (ratio, where) of the largest correct ratio, also among the returns judged pass or
    precision, and of the smallest worst-trial ratio of a bug on a return it affects."""

    correct: tuple[float, str] = (0.0, "-")
    correct_accepted: tuple[float, str] = (0.0, "-")
    bug: tuple[float, str] = (math.inf, "-")
    # How many times smaller the error was when rerun above the precision used (judging/reruns/scaling.py
    # calls 4-fold or more instability): the least an unstable variant's shrank, the most a bug's did.
    unstable_shrink: tuple[float, str] = (math.inf, "-")
    bug_shrink: tuple[float, str] = (0.0, "-")

    def line(self, exercise_id: str) -> str:
        def text(pair: tuple[float, str]) -> str:
            return f"{pair[0]:.3g} ({pair[1]})"

        return (
            f"{exercise_id:<11} largest correct ratio {text(self.correct)}; among returns judged pass or "
            f"precision {text(self.correct_accepted)}; smallest bug ratio {text(self.bug)}; rerun shrink: "
            f"smallest unstable {text(self.unstable_shrink)}, largest bug {text(self.bug_shrink)}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: every corpus folder)")
    parser.add_argument("--correct-trials", type=int, default=None, help="trials per correct variant")
    parser.add_argument("--other-trials", type=int, default=None, help="trials per bug or unstable variant")
    args = parser.parse_args(argv)
    correct_trials = args.correct_trials or REPORT_CORRECT_TRIALS
    other_trials = args.other_trials or OTHER_TRIALS

    contradictions: list[str] = []
    questionable: list[str] = []  # correct code told its formula is unstable: allowed, but wrong advice
    summary: list[str] = []
    started = time.perf_counter()
    header = (
        f"{'exercise':<11} {'variant':<33} {'kind':<9} {'prec':<5} "
        "per return: verdict max_envelope_ratio (inferred precision)"
    )
    print(header)
    print("-" * len(header))
    for exercise_id in args.exercises or corpus_exercises():
        variants = load_manifest(exercise_id)
        graded = grade_variants(exercise_id, variants, correct_trials, other_trials)
        margins = Margins()
        for variant in variants:
            result = graded.results[variant.file]
            found = problems(variant, result)
            row = f"{exercise_id:<11} {variant.file:<33} {variant.kind:<9} {SHORT[variant.precision]:<5}"
            if isinstance(result, Exception):
                print(f"{row}!{found[0]}")
                contradictions.append(f"! {exercise_id}/{variant.file}: {found[0]}")
                continue
            model = result_model(result)
            cells = [
                f"{r.name}={r.verdict} {ratio_text(r.max_envelope_ratio)} "
                f"({SHORT.get(r.precision, r.precision)})"
                for r in model.returns
            ]
            doubtful = ", ".join(
                r.name for r in model.returns if variant.kind == "correct" and r.verdict == "instability"
            )
            print(f"{row}{'!' if found else '?' if doubtful else ' '}{'  '.join(cells)}")
            if doubtful:
                where = f"{exercise_id}/{variant.file} ({variant.precision})"
                questionable.append(f"? {where}: instability on {doubtful}")
            _margins(variant, model, result, margins)
            if found:
                trials = trials_for(variant, correct_trials, other_trials)
                contradictions.append(_contradiction(variant, found, model, trials))
        summary.append(margins.line(exercise_id))
    print()
    print("\n".join(summary))
    print(f"\n{time.perf_counter() - started:.0f} s")
    if questionable:
        print(f"\n{len(questionable)} correct variants judged instability (tests allow it; wrong advice):")
        print("\n".join(questionable))
    if contradictions:
        print(f"\n{len(contradictions)} variants contradict their manifest:")
        print("\n".join(contradictions))
    return 1 if contradictions else 0


def _ratio(value: float | None) -> float:
    return math.inf if value is None else value  # None: NaN or infinite values


def _margins(variant: Variant, model: ResultOut, result: SubmissionResult, margins: Margins) -> None:
    for judged in result.returns:
        where = f"{variant.file} {judged.name}"
        if judged.shrink is None or judged.name not in variant.returns:
            continue
        if variant.kind == "unstable":
            margins.unstable_shrink = min(margins.unstable_shrink, (judged.shrink, where))
        elif variant.kind == "bug":
            margins.bug_shrink = max(margins.bug_shrink, (judged.shrink, where))
    for r in model.returns:
        ratio, where = _ratio(r.max_envelope_ratio), f"{variant.file} {r.name}"
        if variant.kind == "correct":
            margins.correct = max(margins.correct, (ratio, where))
            if r.verdict in ("pass", "precision"):
                margins.correct_accepted = max(margins.correct_accepted, (ratio, where))
        elif variant.kind == "bug" and r.name in variant.returns:
            margins.bug = min(margins.bug, (ratio, where))


def _contradiction(variant: Variant, found: list[str], model: ResultOut, trials: int) -> str:
    lines = [f"! {variant.exercise}/{variant.file} ({variant.kind}, {variant.precision}): {variant.note}"]
    lines += [f"    {text}" for text in found]
    lines.append(
        f"    replay: .venv/bin/grader check {exercise_folder(variant.exercise).relative_to(ROOT)} "
        f"tests/corpus/{variant.exercise}/{variant.file} --seed {model.seed} --trials {trials}"
    )
    for r in model.returns:
        case = r.smallest_failing_case
        if case is not None and r.verdict in ("logic", "error"):
            lines.append(f"    {r.name} smallest failing case: {case.repro}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
