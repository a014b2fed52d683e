"""Grade every course bug and correct variant and print whether each failing return is named as it must be.

    .venv/bin/python tests/course_bugs/report.py [EXERCISE ...] [--trials N]

One row per return a bug affects (and per return of correct code that got a verdict or name it must not):
exercise, file, return, the family (and start of name) the manifest expects, the verdict and the
family: name the grader gave, and OK, UNNAMED (no name yet: allowed) or WRONG-NAME (never allowed). Then
the totals: bugs named of all bugs (a bug is named when each return it affects is), per family, the wrong
names, and correct variants named or judged logic or error. Exit status 1 when anything breaks the
corpus's rules (tests/test_course_bugs.py), 0 otherwise; an unnamed bug alone is not a failure.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for test_course_bugs

from test_course_bugs import (
    TRIALS,
    Case,
    Kind,
    Outcome,
    corpus_exercises,
    grade_cases,
    is_named,
    load_cases,
    min_named_rate,
    naming,
    problems,
)

from grader.results import SubmissionResult


def _expected_text(case: Case, name: str) -> str:
    wanted = case.expected.get(name)
    if wanted is None:
        return "-"
    text = "/".join(f.value for f in wanted.family)
    return text + (f" '{wanted.name}'" if wanted.name else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("exercises", nargs="*", help="exercise ids (default: every corpus folder)")
    parser.add_argument("--trials", type=int, default=TRIALS, help=f"trials per hand-in (default {TRIALS})")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    header = (
        f"{'exercise':<36} {'file':<34} {'return':<16} {'expected':<26} {'got':<8} "
        f"{'family: name':<60} result"
    )
    print(header)
    print("-" * len(header))
    bugs = named = 0
    by_family: Counter[str] = Counter()
    named_by_family: Counter[str] = Counter()
    broken: list[str] = []
    wrong_names = 0  # returns of bugs named by another family or name
    correct_flagged = 0  # correct variants named, or judged logic or error, anywhere
    for exercise_id in args.exercises or corpus_exercises():
        cases = load_cases(exercise_id)
        graded = grade_cases(exercise_id, cases, args.trials)
        for case in cases:
            result = graded.results[case.file]
            found = problems(case, result)
            if found:
                broken.append(f"{exercise_id}/{case.file}: " + "; ".join(found))
                correct_flagged += case.kind is Kind.CORRECT
            if case.kind is Kind.BUG:
                bugs += 1
                hit = is_named(case, result)
                named += hit
                for family in {w.family[0].value for w in case.expected.values()}:
                    by_family[family] += 1
                    named_by_family[family] += hit
            if not isinstance(result, SubmissionResult):
                print(f"{exercise_id:<36} {case.file:<34} grading raised {type(result).__name__}: {result}")
                continue
            for ret in result.returns:
                outcome = naming(case, ret)
                wrong_names += case.kind is Kind.BUG and outcome is Outcome.WRONG_NAME
                shown = (
                    ret.name in case.expected
                    or outcome is Outcome.WRONG_NAME
                    or (ret.verdict.value in ("logic", "error"))
                )
                if not shown:
                    continue
                got = f"{ret.mistake_family or '-'}: {ret.misconception or '-'}"
                print(
                    f"{exercise_id:<36} {case.file:<34} {ret.name:<16} {_expected_text(case, ret.name):<26} "
                    f"{ret.verdict.value:<8} {got[:60]:<60} {outcome.value}"
                )
    print()
    print(
        f"bugs named: {named} / {bugs} ({named / max(bugs, 1):.0%}); "
        f"the manifest's floor {min_named_rate():.0%}"
    )
    print(f"wrongly named returns of bugs: {wrong_names}")
    print(f"correct variants named, or judged logic or error: {correct_flagged}")
    print("per family (the first listed for each return): named / bugs")
    for family in sorted(by_family):
        print(f"  {family:<24} {named_by_family[family]:>3} / {by_family[family]}")
    print(f"{time.perf_counter() - started:.0f} s")
    if broken:
        print(
            f"\n{len(broken)} hand-ins break the corpus's rules (a wrong name, a correct variant named "
            "or logic, a bug's verdict not the manifest's):"
        )
        print("\n".join(broken))
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
