"""Benchmark: what naming the mistake costs a class of failing hand-ins, the course-bug corpus's bugs.

Usage: .venv/bin/python bench/naming_cost.py [--repeats 3] [--trials 200] [EXERCISE ...]

Every bug of tests/course_bugs is graded as a class run grades a class's hand-ins: per exercise, its
references computed once and shared by all its hand-ins, two graded at a time. Twice per repeat, the runs
interleaved so that a slow spell of a shared machine falls on both alike:
- naming on: `grade()` as the CLI runs it, the diagnosis trying every candidate mistake on each return
  judged logic (the candidates computed once per set of references, as in a class run);
- naming off: the same with grader.judging.naming.diagnosis.diagnose returning None.
Fresh references each run (computed outside the timing, the same for both), so no run reuses the
candidates another computed. Printed: each run's seconds, the medians and their ratio, and how many
returns were named in the last run with naming on. Run it before and after a change to the families.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # for test_course_bugs and test_corpus

from test_corpus import exercise_folder  # noqa: E402
from test_course_bugs import SEED, Case, Kind, corpus_exercises, load_cases  # noqa: E402

from grader.exercise.reference import References, compute_references  # noqa: E402
from grader.exercise.settings import Settings  # noqa: E402
from grader.exercise.spec import Exercise, load_exercise  # noqa: E402
from grader.exercise.trials import make_trials  # noqa: E402
from grader.grading import grade  # noqa: E402
from grader.handin.discover import submission_from_path  # noqa: E402
from grader.judging.naming import diagnosis  # noqa: E402
from grader.results import SubmissionResult  # noqa: E402

WORKERS = 2


@contextmanager
def naming_off() -> Iterator[None]:
    """Monkeypatch: the diagnosis names nothing (judge.py calls it through the module)."""
    kept: Callable[..., diagnosis.Diagnosis | None] = diagnosis.diagnose
    diagnosis.diagnose = lambda *args, **kwargs: None
    try:
        yield
    finally:
        diagnosis.diagnose = kept


def class_of(exercises: list[str]) -> list[tuple[Exercise, list[Case]]]:
    chosen = []
    for exercise_id in exercises:
        bugs = [c for c in load_cases(exercise_id) if c.kind is Kind.BUG]
        if bugs:
            chosen.append((load_exercise(exercise_folder(exercise_id)), bugs))
    return chosen


def _graded(exercise: Exercise, references: References, case: Case) -> SubmissionResult:
    submission = submission_from_path(case.path, exercise.spec.entry)
    return grade(exercise, submission, Settings(SEED), references=references)


def graded_class(
    groups: list[tuple[Exercise, list[Case]]], references: list[References]
) -> tuple[float, list[SubmissionResult]]:
    started = time.perf_counter()
    results: list[SubmissionResult] = []
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for (exercise, bugs), shared in zip(groups, references, strict=True):
            results += pool.map(partial(_graded, exercise, shared), bugs)
    return time.perf_counter() - started, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: every corpus folder)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args(argv)
    groups = class_of(args.exercises or corpus_exercises())
    count = sum(len(bugs) for _, bugs in groups)
    print(f"{count} failing hand-ins of {len(groups)} exercises, {args.trials} trials each")

    def fresh() -> list[References]:
        return [compute_references(e, make_trials(e, SEED, args.trials)) for e, _ in groups]

    graded_class(groups, fresh())  # warm: imports, the worker pool, torch in the workers
    seconds: dict[str, list[float]] = {"on": [], "off": []}
    named = 0
    for repeat in range(args.repeats):
        for mode in ("on", "off") if repeat % 2 == 0 else ("off", "on"):
            references = fresh()
            if mode == "off":
                with naming_off():
                    took, _ = graded_class(groups, references)
            else:
                took, results = graded_class(groups, references)
                named = sum(r.misconception is not None for result in results for r in result.returns)
            seconds[mode].append(took)
            print(f"repeat {repeat + 1} naming {mode:<3} {took:7.1f} s", flush=True)
    on, off = statistics.median(seconds["on"]), statistics.median(seconds["off"])
    print(f"median: naming on {on:.1f} s, off {off:.1f} s, ratio {on / off:.2f} ({on - off:+.1f} s)")
    print(f"returns named with naming on: {named}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
