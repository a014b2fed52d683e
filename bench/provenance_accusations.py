"""Count: does the autograd check ever accuse a correct hand derivation, and does it catch every copy?

Usage: .venv/bin/python bench/provenance_accusations.py [--trials 12] [--repeats 1]

Grades, in the real sandbox, with `--trials` trials (3 of them checked; each grading draws its own):
- every bundled exercise with a return to be derived by hand: its solution with float64 inputs and with
  float32 inputs (the float32 variant `grader validate` grades);
- every `correct` and `unstable` variant of tests/corpus/ (right mathematics in float64, float32, float16,
  bfloat16), and the correct hand-ins of tests/provenance_attacks/ (state, a thread, torch.func);
- every `autograd` variant of tests/corpus/, every attack of tests/provenance_attacks/ and every
  numerical derivative of tests/numerical_attacks/ (graph2's course refuses them).
Prints, per group, how many gradings had a return judged `autograd` or `numerical` or denied its points by
a checked trial (accused) or, for the copies, how many lost the points of every return they copied (caught).
Exit status 1 on any accusation or escape.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml

from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, discover_exercises, load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
ATTACKS = ROOT / "tests" / "provenance_attacks"
NUMERICAL = ROOT / "tests" / "numerical_attacks"  # refused by graph2's course (numerical_derivatives)
CHECKED = "is derived by hand did not complete"  # no points where the checked worker gave nothing
# Correct hand derivations among the attack files: state, a thread, torch.func for auto_grad
CORRECT = ("stateful_counter.py", "stateful_torch.py", "honest_threads_func.py")


def by_hand_exercises() -> Iterator[Exercise]:
    for folder in discover_exercises(ROOT / "exercises"):
        exercise = load_exercise(folder)
        if any(r.by_hand for r in exercise.spec.returns):
            yield exercise


def corpus(kinds: set[str]) -> Iterator[tuple[Exercise, Path, frozenset[str]]]:
    """(exercise, variant file, the returns it copies from autograd) of the corpus variants of `kinds`."""
    for manifest in sorted(CORPUS.glob("*/manifest.yaml")):
        exercise = load_exercise(next((ROOT / "exercises").glob(f"*/{manifest.parent.name}")))
        for variant in yaml.safe_load(manifest.read_text())["variants"]:
            if variant["kind"] in kinds:
                copied = frozenset(variant.get("returns", ()))
                yield exercise, manifest.parent / variant["file"], copied


def accused(exercise: Exercise, path: Path, trials: int, inputs_as: str | None = None) -> list[str]:
    handin = submission_from_path(path, exercise.spec.entry)
    result = grade(exercise, handin, Settings(0, trials), inputs_as=inputs_as)
    # `autograd` or `numerical`, or no points where the checked worker did not complete (provenance.py)
    return [r.name for r in result.returns if r.verdict.not_by_hand or CHECKED in r.message]


def escaped(exercise: Exercise, path: Path, trials: int, copied: frozenset[str]) -> list[str]:
    """The returns copied from autograd that kept points."""
    result = grade(exercise, submission_from_path(path, exercise.spec.entry), Settings(0, trials))
    by_hand = {r.name for r in exercise.spec.returns if r.by_hand}
    return [r.name for r in result.returns if r.name in (copied or by_hand) and r.score > 0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    graph2 = load_exercise(ROOT / "exercises" / "mac0460" / "graph2")
    bad = 0

    def tally(label: str, findings: list[tuple[str, list[str]]]) -> None:
        nonlocal bad
        wrong = [(what, names) for what, names in findings if names]
        bad += len(wrong)
        print(f"{label}: {len(findings) - len(wrong)} of {len(findings)} as they should be")
        for what, names in wrong:
            print(f"  ! {what}: {', '.join(names)}")

    for _ in range(args.repeats):
        solutions = []
        for exercise in by_hand_exercises():
            solution = exercise.path_of(exercise.spec.solution or "solution.py")
            for inputs_as in (None, "float32"):
                what = f"{exercise.id} solution ({inputs_as or 'float64'} inputs)"
                solutions.append((what, accused(exercise, solution, args.trials, inputs_as)))
        tally("bundled solutions never accused", solutions)
        variants = [
            (f"{e.id}/{p.name}", accused(e, p, args.trials)) for e, p, _ in corpus({"correct", "unstable"})
        ]
        stateful = [(name, accused(graph2, ATTACKS / name, args.trials)) for name in CORRECT]
        tally("correct corpus variants and stateful hand-ins never accused", variants + stateful)
        copies = [(f"{e.id}/{p.name}", escaped(e, p, args.trials, c)) for e, p, c in corpus({"autograd"})]
        attacks = [
            (p.name, escaped(graph2, p, args.trials, frozenset({"user_grad"})))
            for p in [*sorted(ATTACKS.glob("*.py")), *sorted(NUMERICAL.glob("*.py"))]
            if p.name not in CORRECT
        ]
        tally("autograd copies (corpus) and attacks that lose every copied return's points", copies + attacks)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
