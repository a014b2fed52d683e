"""Benchmark: a cold check's deferred spreads judge as all of them would (issue 41's third decision).

Usage: .venv/bin/python bench/deferred_verdicts.py [--trials N] [--seed S] [EXERCISE_ID...]

Every bundled exercise's solution and wrong files, and the hand-ins of tests/course_bugs and tests/corpus,
are graded in the real sandbox twice on the same trials: with references whose spreads are all computed,
and with the spreads deferred (DeferredSpreads, computed in this process as judging asks, as a cold
`grader check` of torch-free code computes them in its references' fork). Printed: the hand-ins whose
verdicts, scores, failing entries or named mistakes differ, or the message of a return judged by its
values that did not pass (none is the claim: a first pass with any such trial computes every spread);
and for the hand-ins whose returns all pass, how many trials' spreads were computed of how many, and the
largest envelope ratio each way (the deferred one may be larger, never over 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.exercise.expected import DeferredSpreads, Expected, References  # noqa: E402
from grader.exercise.reference import compute_references, compute_spreads  # noqa: E402
from grader.exercise.settings import Settings  # noqa: E402
from grader.exercise.spec import Exercise, load_exercise  # noqa: E402
from grader.exercise.trials import make_trials  # noqa: E402
from grader.grading import grade  # noqa: E402
from grader.handin.discover import submission_from_path  # noqa: E402
from grader.outcomes import Verdict  # noqa: E402
from grader.results import SubmissionResult  # noqa: E402


def exercises() -> dict[str, Path]:
    return {
        load_exercise(spec.parent).id: spec.parent for spec in sorted(ROOT.glob("exercises/**/exercise.yaml"))
    }


def handins(exercise_id: str, folder: Path) -> Iterator[Path]:
    yield from sorted(folder.glob("solution.py"))
    yield from sorted(folder.glob("wrong/*.py"))
    for tree in ("course_bugs", "corpus"):
        yield from sorted((ROOT / "tests" / tree / exercise_id).rglob("*.py"))


def deferred_spreads(exercise: Exercise, whole: References, asked: list[int]) -> DeferredSpreads:
    """`whole`'s spreads deferred, computed here as judging asks, each trial asked for put in `asked`."""

    def fill(wanted: Sequence[int]) -> dict[int, Expected]:
        asked.extend(wanted)
        return compute_spreads(exercise, whole.trials, whole.expected, set(wanted))

    return DeferredSpreads(list(whole.expected), {}, fill)


def described(result: SubmissionResult) -> str:
    """What must not move: every verdict, score, failing entry and named mistake, and the message of every
    return judged by its values but not passed (a pass's gives its largest envelope ratio, which may; an
    autograd check's, the checked worker's changed gradients, drawn afresh in each run)."""
    parts: list[object] = [result.passed, result.error]
    for r in result.returns:
        parts.append((r.name, r.verdict, r.score, r.failed_trials, r.misconception, r.failing_entries))
        if r.verdict not in (Verdict.PASS, Verdict.AUTOGRAD, Verdict.NUMERICAL):
            parts.append((r.message, r.max_ratio, r.case, r.shrink, r.near_misses))
    return repr(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args()
    found = exercises()
    chosen = args.ids or sorted(found)
    compared = differ = computed = settled_total = passing = 0
    worst = 0.0
    for exercise_id in chosen:
        exercise = load_exercise(found[exercise_id])
        files = list(handins(exercise_id, found[exercise_id]))
        if not files:
            continue
        whole = compute_references(exercise, make_trials(exercise, args.seed, args.trials))
        for path in files:
            asked: list[int] = []
            deferred = References(whole.trials, whole.expected, deferred_spreads(exercise, whole, asked))
            settings = Settings(args.seed, args.trials)
            submission = submission_from_path(path, exercise.spec.entry)
            right = grade(exercise, submission, settings, references=whole)
            got = grade(exercise, submission, settings, references=deferred)
            passed = all(r.verdict is Verdict.PASS for r in right.returns)
            compared += 1
            if described(got) != described(right):
                differ += 1
                print(f"DIFFERS {exercise_id} {path.relative_to(ROOT)}", flush=True)
            if passed:
                passing += 1
                computed += len(asked)
                settled_total += args.trials
                for mine, theirs in zip(got.returns, right.returns, strict=True):
                    if not theirs.max_ratio <= mine.max_ratio <= 1.0:
                        print(f"RATIO {exercise_id} {path.name} {theirs.max_ratio} {mine.max_ratio}")
                    worst = max(worst, mine.max_ratio)
        print(f"{exercise_id}: {len(files)} hand-ins", flush=True)
    print(f"compared {compared} hand-ins: {differ} differ")
    print(f"passing {passing}: spreads computed for {computed} of {settled_total} trials", end="; ")
    print(f"largest envelope ratio {worst:.3g}")


if __name__ == "__main__":
    main()
