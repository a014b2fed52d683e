"""The precision corpus: variants of each exercise's solution, graded against what their manifest says.

`tests/corpus/<exercise>/manifest.yaml` lists each variant with its kind:

- `correct`: right mathematics in some precision (float64, float32, float16, bfloat16) and formula; over
  10,000 trials no return may be judged `logic` or `error`.
- `unstable`: a formula that is right in float64 but overflows or cancels at the precision it runs in; over
  1,000 trials each return in `returns` must be `instability`, and the others neither `logic` nor `error`.
- `bug`: a real mistake (transpose, sign, factor 2, missing factor, wrong input, `*` for `@`); over 1,000
  trials each return in `returns` must be `logic`, and the others neither `logic` nor `error`. Its
  `misconception` is the start of the name the diagnosis must give those returns, or `none` for a
  mistake no candidate describes (then none may be named). Correct and unstable code is never named one.
- `autograd`: a return to be derived by hand copied from autograd (`.grad`, `autograd.grad`, `torch.func`,
  a backward pass run by torch); each return in `returns` must be `autograd`, the others neither `logic`
  nor `error`. No variant of another kind may ever be judged `autograd`.

Each exercise's references are computed once for all its variants, which are graded two at a time the
first time one of them is asked for. `tests/corpus/report.py` prints the same gradings as a table.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from grader.exercise.reference import References, compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, discover_exercises, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import Verdict
from grader.results import SubmissionResult

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"


def exercise_folder(exercise_id: str) -> Path:
    """A bundled exercise's folder: the library is grouped by course, the corpus names exercises by id."""
    for folder in discover_exercises(EXERCISES):
        if f"\nid: {exercise_id}\n" in "\n" + (folder / "exercise.yaml").read_text(encoding="utf-8"):
            return folder
    raise FileNotFoundError(f"no exercise with id '{exercise_id}' under {EXERCISES}")


CORPUS = ROOT / "tests" / "corpus"
SEED = 0
# Correct code must never be called a mistake: many trials. The suite runs 2,000 to stay fast;
# tests/corpus/report.py (and GRADER_CORPUS_TRIALS=10000 here) measure over 10,000.
CORRECT_TRIALS = int(os.environ.get("GRADER_CORPUS_TRIALS", "2000"))
OTHER_TRIALS = 1_000  # a bug or an unstable formula shows on far fewer
# The suite's count for correct float64 and float32 code: an exercise's default, so a user's `grader check`
# at the default seed grades exactly these trials; seeds 1 and 2 are clean on them too (measured). The
# narrow formats, where rounding comes nearest the tolerance, keep CORRECT_TRIALS. GRADER_CORPUS_TRIALS
# grades every precision at its count.
WIDE_CORRECT_TRIALS = CORRECT_TRIALS if "GRADER_CORPUS_TRIALS" in os.environ else 1_000
# The suite's count for bugs and autograd copies: every one of the corpus gets its manifest's verdicts and
# names on the first 200 trials of seeds 0, 1 and 2 (measured). Unstable formulas keep OTHER_TRIALS: on
# seed 1 softmax_large's naive f64 softmax is judged logic at 200 trials, instability at 1,000.
MISTAKE_TRIALS = 200
WORKERS = 2
KINDS = ("correct", "unstable", "bug", "autograd")
PRECISIONS = ("float64", "float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Variant:
    exercise: str
    file: str
    kind: str
    precision: str
    note: str
    returns: tuple[str, ...]  # for unstable and bug: the returns the defect affects
    misconception: str | None = None  # for bug: the start of the name its returns get (None: no name)

    @property
    def path(self) -> Path:
        return CORPUS / self.exercise / self.file

    @property
    def expected_verdict(self) -> Verdict | None:
        return {
            "unstable": Verdict.INSTABILITY,
            "bug": Verdict.LOGIC,
            "autograd": Verdict.AUTOGRAD,
        }.get(self.kind)


class ManifestError(Exception):
    pass


def corpus_exercises() -> list[str]:
    return sorted(p.parent.name for p in CORPUS.glob("*/manifest.yaml"))


def required_precisions(exercise_id: str) -> tuple[str, ...]:
    """The precisions the manifest's correct variants must cover: all four, unless it lists fewer (where
    the exercise's values are out of a narrow format's range: exp(-60) in float16)."""
    data = yaml.safe_load((CORPUS / exercise_id / "manifest.yaml").read_text(encoding="utf-8"))
    listed = data.get("precisions", PRECISIONS) if isinstance(data, dict) else PRECISIONS
    unknown = set(listed) - set(PRECISIONS)
    if unknown:
        raise ManifestError(f"{exercise_id}/manifest.yaml: precisions {sorted(unknown)} are not known")
    return tuple(listed)


def load_manifest(exercise_id: str) -> list[Variant]:
    """The variants of one exercise's manifest, checked field by field."""
    path = CORPUS / exercise_id / "manifest.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    entries = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ManifestError(f"{path}: expected a non-empty list under 'variants'")
    variants = [_variant(path, exercise_id, k, entry) for k, entry in enumerate(entries)]
    files = [v.file for v in variants]
    duplicates = sorted({f for f in files if files.count(f) > 1})
    if duplicates:
        raise ManifestError(f"{path}: listed more than once: {', '.join(duplicates)}")
    return variants


def _variant(path: Path, exercise_id: str, k: int, entry: Any) -> Variant:
    where = f"{path}: variants[{k}]"
    if not isinstance(entry, dict):
        raise ManifestError(f"{where}: expected a mapping")
    unknown = set(entry) - {"file", "kind", "precision", "note", "returns", "misconception"}
    if unknown:
        raise ManifestError(f"{where}: unknown fields {sorted(unknown)}")
    file, kind, precision = entry.get("file"), entry.get("kind"), entry.get("precision")
    if not isinstance(file, str) or not (path.parent / file).is_file():
        raise ManifestError(f"{where}: file {file!r} is not a file beside the manifest")
    if kind not in KINDS:
        raise ManifestError(f"{where} ({file}): kind {kind!r} is not one of {', '.join(KINDS)}")
    if precision not in PRECISIONS:
        raise ManifestError(
            f"{where} ({file}): precision {precision!r} is not one of {', '.join(PRECISIONS)}"
        )
    returns = entry.get("returns") or []
    if not isinstance(returns, list) or not all(isinstance(r, str) for r in returns):
        raise ManifestError(f"{where} ({file}): returns must be a list of return names")
    if kind != "correct" and not returns:
        raise ManifestError(f"{where} ({file}): a {kind} variant must list the returns it affects")
    if kind == "correct" and returns:
        raise ManifestError(f"{where} ({file}): a correct variant lists no affected returns")
    misconception = entry.get("misconception")
    if (kind == "bug") != isinstance(misconception, str):
        raise ManifestError(f"{where} ({file}): a bug, and only a bug, says its misconception (or none)")
    named = None if misconception in (None, "none") else str(misconception)
    note = str(entry.get("note", ""))
    return Variant(exercise_id, file, kind, precision, note, tuple(returns), named)


@dataclass(frozen=True)
class Graded:
    exercise: Exercise
    results: Mapping[str, SubmissionResult | Exception]  # by variant file; what grading raised, if it did


def trials_for(variant: Variant, correct: int = CORRECT_TRIALS, other: int = OTHER_TRIALS) -> int:
    return correct if variant.kind == "correct" else other


def grade_variants(
    exercise_id: str,
    variants: Sequence[Variant],
    correct_trials: int = CORRECT_TRIALS,
    other_trials: int = OTHER_TRIALS,
    workers: int = WORKERS,
    count: Callable[[Variant], int] | None = None,
) -> Graded:
    """Grade variants of one exercise on shared references: the first trials of one set serve all.
    `count`, where given, says each variant's trials instead of the two counts."""
    exercise = load_exercise(exercise_folder(exercise_id))
    count = count or (lambda v: trials_for(v, correct_trials, other_trials))
    counts = {v.file: count(v) for v in variants}
    references = compute_references(exercise, make_trials(exercise, SEED, max(counts.values())))
    by_count: dict[int, References] = {
        n: dataclasses.replace(references, trials=references.trials[:n]) for n in set(counts.values())
    }

    def one(variant: Variant) -> SubmissionResult | Exception:
        submission = submission_from_path(variant.path, exercise.spec.entry)
        try:
            return grade(exercise, submission, Settings(SEED), references=by_count[counts[variant.file]])
        except Exception as exc:  # the grader's own failure: reported for this variant, the others go on
            return exc

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(zip([v.file for v in variants], pool.map(one, variants), strict=True))
    return Graded(exercise, results)


def problems(variant: Variant, result: SubmissionResult | Exception) -> list[str]:
    """What in `result` contradicts the variant's manifest entry, in words; empty when it agrees."""
    if isinstance(result, Exception):
        return [f"grading raised {type(result).__name__}: {result}"]
    found: list[str] = []
    if result.error is not None:
        found.append(f"the submission failed: {result.error.kind}: {result.error.message}")
    verdicts = {r.name: r.verdict for r in result.returns}
    unknown = [name for name in variant.returns if name not in verdicts]
    if unknown:
        found.append(f"the manifest names returns the exercise does not have: {unknown}")
    expected = variant.expected_verdict
    for ret in result.returns:
        if ret.name in variant.returns and expected is not None:
            if ret.verdict is not expected:
                found.append(
                    f"{ret.name}: expected {expected.value}, got {ret.verdict.value} — {ret.message}"
                )
        elif ret.verdict in (Verdict.LOGIC, Verdict.ERROR, Verdict.AUTOGRAD) or (
            variant.kind == "correct" and ret.verdict is Verdict.INSTABILITY
        ):
            # Correct code is never called a mistake, nor told that its formula is unstable; a hand
            # derivation is never taken for autograd's.
            found.append(f"{ret.name}: {ret.verdict.value} — {ret.message}")
        wanted = variant.misconception if ret.name in variant.returns and variant.kind == "bug" else None
        named = ret.misconception
        if not (named is None if wanted is None else (named or "").startswith(wanted)):
            found.append(f"{ret.name}: named the misconception {named!r}, expected {wanted or 'none'!r}")
    return found


def describe(variant: Variant, result: SubmissionResult | Exception) -> str:
    lines = [f"{variant.exercise}/{variant.file} ({variant.kind}, {variant.precision}): {variant.note}"]
    if isinstance(result, Exception):
        return "\n".join(lines)
    lines += [f"  {r.name}: {r.verdict.value} ({r.precision.value}) — {r.message}" for r in result.returns]
    lines.append(f"  replay: {result.repro()}")
    return "\n".join(lines)


# --- the tests -------------------------------------------------------------------------------------------


def _cases() -> list[Any]:
    cases: list[Any] = []
    for exercise_id in corpus_exercises():
        try:
            variants = load_manifest(exercise_id)
        except ManifestError:
            continue  # test_manifests_are_valid reports it
        for variant in variants:
            cases.append(pytest.param(variant, id=f"{exercise_id}-{variant.file}"))
    return cases


def suite_trials(variant: Variant) -> int:
    """The suite's count for a variant; report.py grades each kind at trials_for's."""
    if variant.kind in ("bug", "autograd"):
        return MISTAKE_TRIALS
    if variant.kind == "correct" and variant.precision in ("float64", "float32"):
        return WIDE_CORRECT_TRIALS
    return trials_for(variant)


class Gradings:
    """Grades all variants of an exercise the first time one of them is asked for."""

    def __init__(self) -> None:
        self._done: dict[str, Graded] = {}

    def get(self, exercise_id: str) -> Graded:
        if exercise_id not in self._done:
            self._done[exercise_id] = grade_variants(
                exercise_id, load_manifest(exercise_id), count=suite_trials
            )
        return self._done[exercise_id]


@pytest.fixture(scope="module")
def gradings() -> Gradings:
    return Gradings()


def test_manifests_are_valid() -> None:
    exercises = corpus_exercises()
    assert {"graph1", "graph2", "reciprocal", "softmax_ce"} <= set(exercises)
    for exercise_id in exercises:
        variants = load_manifest(exercise_id)
        listed = {v.file for v in variants}
        on_disk = {p.name for p in (CORPUS / exercise_id).glob("*.py")}
        assert on_disk == listed, f"{exercise_id}: files not in the manifest: {sorted(on_disk - listed)}"
        assert (exercise_folder(exercise_id) / "exercise.yaml").is_file()
        kinds = {(v.kind, v.precision) for v in variants}
        for precision in required_precisions(exercise_id):
            assert ("correct", precision) in kinds, f"{exercise_id}: no correct {precision} variant"
        assert any(v.kind == "bug" for v in variants), f"{exercise_id}: no bug variants"


@pytest.mark.parametrize("variant", _cases())
def test_variant(gradings: Gradings, variant: Variant) -> None:
    result = gradings.get(variant.exercise).results[variant.file]
    if isinstance(result, Exception):
        raise result
    assert result.trials == suite_trials(variant)
    found = problems(variant, result)
    assert not found, describe(variant, result) + "\n" + "\n".join(found)
