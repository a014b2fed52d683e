"""The course-bug corpus: real-style student bugs in the bundled exercises, each with the mistake it must be
named by, and correct variants that must never be named or called a mistake.

`tests/course_bugs/<exercise id>/manifest.yaml` lists the hand-ins of one exercise:

- `bugs`: each a file, a `note` (the mistake in words), a `source` (where such code was seen: a public
  student repository, a forum question) and per failing return the `family` it must be named by (a
  `grader.outcomes.MistakeFamily` value, or a list of the acceptable ones), optionally the start of the
  `name`, and the `verdict` it must get (default `logic`). Returns not listed must be neither `logic` nor
  `error`.
- `correct`: each a file and a `note`; no return may be `logic` or `error`, none may be named.

`tests/course_bugs/manifest.yaml` holds `min_named_rate`: the share of bugs whose every failing return is
named by its family (and name), below which the suite fails. A bug unnamed today is allowed; a bug named
by another family, or a correct variant named at all, never is. `tests/course_bugs/report.py` prints the
same gradings as a table; `bench/naming_cost.py` measures what naming costs a class of these hand-ins.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from test_corpus import exercise_folder

from grader.exercise.reference import compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import MistakeFamily, Verdict
from grader.results import ReturnResult, SubmissionResult

ROOT = Path(__file__).resolve().parent.parent
COURSE_BUGS = ROOT / "tests" / "course_bugs"
SEED = 0
# report.py's count. Correct code's rounding is checked at the exercises' own counts elsewhere (validate,
# tests/corpus); here it must not be named or called a mistake.
TRIALS = 200
# The suite's: every bug gets its verdicts and the same names on the first 60 trials as on 200 (measured),
# and the whole corpus grades in a third of the time.
SUITE_TRIALS = 60
WORKERS = 2


class ManifestError(Exception):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expected(_Strict):
    """What one failing return of a bug must get."""

    family: tuple[MistakeFamily, ...] = Field(min_length=1)
    name: str | None = None  # the start of the name, where one family has several names
    verdict: Verdict = Verdict.LOGIC

    @field_validator("family", mode="before")
    @classmethod
    def _one_or_more(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


class BugEntry(_Strict):
    file: str
    note: str
    source: str
    returns: dict[str, Expected] = Field(min_length=1)


class CorrectEntry(_Strict):
    file: str
    note: str


class Manifest(_Strict):
    bugs: list[BugEntry] = Field(default_factory=list)
    correct: list[CorrectEntry] = Field(default_factory=list)


class RootManifest(_Strict):
    min_named_rate: float = Field(ge=0, le=1)


class Kind(enum.Enum):
    BUG = "bug"
    CORRECT = "correct"


@dataclass(frozen=True)
class Case:
    exercise: str
    file: str
    kind: Kind
    note: str
    expected: Mapping[str, Expected]  # empty for correct code

    @property
    def path(self) -> Path:
        return COURSE_BUGS / self.exercise / self.file


class Outcome(enum.Enum):
    """How a return's name compares with the manifest's."""

    OK = "OK"  # named as expected, or (correct code, unlisted return) not named
    UNNAMED = "UNNAMED"  # a bug's return no candidate named yet: allowed
    WRONG_NAME = "WRONG-NAME"  # named by another family or name, or named where nothing may be


def _read_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ManifestError(f"{path}: cannot read: {exc}") from exc


def _validated(model: type[BaseModel], path: Path) -> BaseModel:
    try:
        return model.model_validate(_read_yaml(path))
    except ValidationError as exc:
        lines = [f"{path}: {len(exc.errors())} problem(s):"]
        lines += [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise ManifestError("\n".join(lines)) from None


def min_named_rate() -> float:
    root = _validated(RootManifest, COURSE_BUGS / "manifest.yaml")
    assert isinstance(root, RootManifest)
    return root.min_named_rate


def corpus_exercises() -> list[str]:
    return sorted(p.parent.name for p in COURSE_BUGS.glob("*/manifest.yaml"))


def load_cases(exercise_id: str) -> list[Case]:
    """One exercise's cases, the manifest checked against the files beside it."""
    path = COURSE_BUGS / exercise_id / "manifest.yaml"
    manifest = _validated(Manifest, path)
    assert isinstance(manifest, Manifest)
    cases = [Case(exercise_id, b.file, Kind.BUG, b.note, b.returns) for b in manifest.bugs]
    cases += [Case(exercise_id, c.file, Kind.CORRECT, c.note, {}) for c in manifest.correct]
    files = [c.file for c in cases]
    twice = sorted({f for f in files if files.count(f) > 1})
    if twice:
        raise ManifestError(f"{path}: listed more than once: {', '.join(twice)}")
    missing = [f for f in files if not (path.parent / f).is_file()]
    if missing:
        raise ManifestError(f"{path}: no such file beside the manifest: {', '.join(missing)}")
    unlisted = sorted({p.name for p in path.parent.glob("*.py")} - set(files))
    if unlisted:
        raise ManifestError(f"{path}: files not in the manifest: {', '.join(unlisted)}")
    return cases


@dataclass(frozen=True)
class Graded:
    exercise: Exercise
    results: Mapping[str, SubmissionResult | Exception]  # by file; what grading raised, if it did


def grade_cases(
    exercise_id: str, cases: Sequence[Case], trials: int = TRIALS, workers: int = WORKERS
) -> Graded:
    """Grade one exercise's cases on references computed once for all of them."""
    exercise = load_exercise(exercise_folder(exercise_id))
    references = compute_references(exercise, make_trials(exercise, SEED, trials))

    def one(case: Case) -> SubmissionResult | Exception:
        submission = submission_from_path(case.path, exercise.spec.entry)
        try:
            return grade(exercise, submission, Settings(SEED), references=references)
        except Exception as exc:  # the grader's own failure: reported for this case, the others go on
            return exc

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(zip([c.file for c in cases], pool.map(one, cases), strict=True))
    return Graded(exercise, results)


def naming(case: Case, ret: ReturnResult) -> Outcome:
    wanted = case.expected.get(ret.name)
    if ret.misconception is None:
        return Outcome.UNNAMED if wanted is not None else Outcome.OK
    if wanted is None or ret.mistake_family not in wanted.family:
        return Outcome.WRONG_NAME
    return (
        Outcome.OK if wanted.name is None or ret.misconception.startswith(wanted.name) else Outcome.WRONG_NAME
    )


def problems(case: Case, result: SubmissionResult | Exception) -> list[str]:
    """What in `result` breaks the corpus's rules, in words; an unnamed bug is not one of them."""
    if isinstance(result, Exception):
        return [f"grading raised {type(result).__name__}: {result}"]
    found: list[str] = []
    if result.error is not None:
        found.append(f"the hand-in failed: {result.error.kind}: {result.error.message}")
    names = {r.name for r in result.returns}
    unknown = sorted(set(case.expected) - names)
    if unknown:
        found.append(f"the manifest names returns the exercise does not have: {unknown}")
    for ret in result.returns:
        wanted = case.expected.get(ret.name)
        if wanted is not None and ret.verdict is not wanted.verdict:
            found.append(
                f"{ret.name}: expected {wanted.verdict.value}, got {ret.verdict.value} — {ret.message}"
            )
        elif wanted is None and ret.verdict in (Verdict.LOGIC, Verdict.ERROR):
            found.append(f"{ret.name}: {ret.verdict.value}, listed as right — {ret.message}")
        if naming(case, ret) is Outcome.WRONG_NAME:
            expected = "nothing" if wanted is None else "/".join(f.value for f in wanted.family)
            found.append(
                f"{ret.name}: named {ret.misconception!r} ({ret.mistake_family}), expected {expected}"
                + (f" starting {wanted.name!r}" if wanted is not None and wanted.name else "")
            )
    return found


def is_named(case: Case, result: SubmissionResult | Exception) -> bool:
    """A bug counts as named when every return it affects gets the name the manifest says."""
    if isinstance(result, Exception):
        return False
    by_name = {r.name: r for r in result.returns}
    return all(name in by_name and naming(case, by_name[name]) is Outcome.OK for name in case.expected)


def describe(case: Case, result: SubmissionResult | Exception) -> str:
    lines = [f"{case.exercise}/{case.file} ({case.kind.value}): {case.note}"]
    if isinstance(result, SubmissionResult):
        lines += [
            f"  {r.name}: {r.verdict.value} [{r.mistake_family or '-'}: {r.misconception or '-'}]"
            f" — {r.message}"
            for r in result.returns
        ]
        lines.append(f"  replay: {result.repro()}")
    return "\n".join(lines)


# --- the tests -------------------------------------------------------------------------------------------


class Corpus:
    """Grades the whole corpus the first time it is asked for: exercises in turn, two hand-ins at a time."""

    def __init__(self) -> None:
        self._cases: list[Case] | None = None
        self._results: dict[tuple[str, str], SubmissionResult | Exception] = {}

    def cases(self) -> list[Case]:
        if self._cases is None:
            self._cases = [case for exercise_id in corpus_exercises() for case in load_cases(exercise_id)]
            for exercise_id in corpus_exercises():
                mine = [c for c in self._cases if c.exercise == exercise_id]
                graded = grade_cases(exercise_id, mine, SUITE_TRIALS)
                self._results.update({(exercise_id, f): r for f, r in graded.results.items()})
        return self._cases

    def result(self, case: Case) -> SubmissionResult | Exception:
        self.cases()
        return self._results[(case.exercise, case.file)]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus()


def test_manifests_are_valid_and_cover_the_courses() -> None:
    exercises = corpus_exercises()
    cases = [case for exercise_id in exercises for case in load_cases(exercise_id)]
    for exercise_id in exercises:
        assert (exercise_folder(exercise_id) / "exercise.yaml").is_file()
    bugs = [c for c in cases if c.kind is Kind.BUG]
    assert len(bugs) >= 70
    assert sum(c.kind is Kind.CORRECT for c in cases) >= 15
    courses = {e.split(".")[0] if "." in e else "basics" for e in exercises}
    assert {"cs231n", "cs224n", "eecs498", "basics"} <= courses
    families = {f for c in bugs for wanted in c.expected.values() for f in wanted.family}
    wanted_families = {
        MistakeFamily.TERM_SCALE, MistakeFamily.RESHAPE_FOR_TRANSPOSE, MistakeFamily.DROPPED_PATH,
        MistakeFamily.OVERWRITTEN, MistakeFamily.TIME_SHIFT, MistakeFamily.GATE_ORDER,
        MistakeFamily.WRONG_AXES, MistakeFamily.CONVENTION,
    }  # fmt: skip
    assert wanted_families <= families, f"families without a bug: {wanted_families - families}"
    assert 0 < min_named_rate() <= 1


def test_a_manifest_error_says_where(tmp_path: Path) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text("bugs:\n  - {file: a.py, note: n, source: s, returns: {dx: {family: typo}}}\n")
    with pytest.raises(ManifestError) as raised:
        _validated(Manifest, path)
    assert str(path) in str(raised.value)
    assert "bugs.0.returns.dx.family" in str(raised.value)


def _cases() -> list[object]:
    try:
        return [
            pytest.param(case, id=f"{case.exercise}-{case.file}")
            for exercise_id in corpus_exercises()
            for case in load_cases(exercise_id)
        ]
    except ManifestError:
        return []  # test_manifests_are_valid_and_cover_the_courses reports it


@pytest.mark.parametrize("case", _cases())
def test_case(corpus: Corpus, case: Case) -> None:
    result = corpus.result(case)
    found = problems(case, result)
    assert not found, describe(case, result) + "\n" + "\n".join(found)


def test_named_rate(corpus: Corpus) -> None:
    bugs = [c for c in corpus.cases() if c.kind is Kind.BUG]
    named = [c for c in bugs if is_named(c, corpus.result(c))]
    rate = len(named) / len(bugs)
    assert rate >= min_named_rate(), (
        f"{len(named)} of {len(bugs)} course bugs named ({rate:.0%}), below the manifest's "
        f"{min_named_rate():.0%}: run .venv/bin/python tests/course_bugs/report.py for the table"
    )
