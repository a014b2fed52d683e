"""Torch float64 instability: an unstable formula told from a mistake without a precision above float64.

tests/torch_instability/ holds an exercise (CS231n's softmax loss without regularisation, on scores X @ W
that lie far apart across rows) and real-style torch float64 hand-ins: one shift for the whole batch
(`scores - scores.max()`, loss by autograd and by hand), log(sum(exp(scores))) unshifted, and bugs that
fail on large inputs as well (the gradient's sign, the 1/N of the mean, the columns' max, a row's max
subtracted in the log-sum-exp and never added back). The grader runs each failing float64 trial again
on inputs moved by the exercise's shift invariance (grader/judging/invariance.py): the unstable formulas
are right there, and are `instability`; the bugs are still wrong there, and stay `logic`.

tests/torch_instability/reg_variants/ holds torch float64 hand-ins of the stress exercise, which adds
reg * sum(W * W): invariant only with reg at 0, so each failing trial is also run with reg at 0 (moved and
not) and moved with reg as given. A batch-wide max is instability there too; a mistake in the reg term
(reg * W for 2 * reg * W, reg forgotten) or in the data term (sign, 1/N) stays `logic`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import EXERCISES, exercise_folder, grader_run
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.exercise.reference import References, compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, ReturnSpec, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging import invariance
from grader.judging.compare import Compared, Comparison, Precision, RerunOutcome, compare
from grader.judging.reruns.outcomes import Answered, Refused, Rerun, TorchRefused
from grader.judging.reruns.resolve import finite_somewhere, resolve_with_rerun
from grader.judging.reruns.shifted import ZeroedRuns
from grader.outcomes import Verdict
from grader.results import SubmissionResult

HERE = Path(__file__).resolve().parent / "torch_instability"
VARIANTS = HERE / "variants"
U64 = 2.0**-52
TRIALS = 200  # about 40% of trials put a row more than 708 below the batch's maximum

# file -> the verdict each return must get
EXPECTED = {
    "global_max.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.INSTABILITY},
    "global_max_by_hand.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.INSTABILITY},
    "unshifted_lse.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.INSTABILITY},
    # the loss is right (and unstable); the gradient's mistake is a mistake on large inputs too
    "bug_global_max_sign.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.LOGIC},
    "bug_global_max_no_mean.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.LOGIC},
    "bug_column_max.py": {"loss": Verdict.LOGIC, "dW": Verdict.LOGIC},
    # the max is detached, so the gradient is softmax's: right; the loss is off by each row's max
    "bug_lse_without_max.py": {"loss": Verdict.LOGIC, "dW": Verdict.PASS},
}


@pytest.fixture(scope="module")
def exercise() -> Exercise:
    return load_exercise(HERE)


@pytest.fixture(scope="module")
def references(exercise: Exercise) -> References:
    return compute_references(exercise, make_trials(exercise, 0, TRIALS))


@pytest.fixture(scope="module")
def graded(exercise: Exercise, references: References) -> dict[str, SubmissionResult]:
    results = {}
    for name in [*EXPECTED, "../solution.py"]:
        submission = submission_from_path(VARIANTS / name, exercise.spec.entry)
        results[name] = grade(exercise, submission, Settings(0), references=references)
    return results


@pytest.mark.parametrize("name", list(EXPECTED))
def test_verdicts(graded: dict[str, SubmissionResult], name: str) -> None:
    verdicts = {r.name: r.verdict for r in graded[name].returns}
    assert verdicts == EXPECTED[name], {r.name: r.message for r in graded[name].returns}


def test_the_solution_passes(graded: dict[str, SubmissionResult]) -> None:
    assert {r.verdict for r in graded["../solution.py"].returns} == {Verdict.PASS}


def test_unstable_returns_get_a_plain_sentence(graded: dict[str, SubmissionResult]) -> None:
    for name in ("global_max.py", "global_max_by_hand.py", "unshifted_lse.py"):
        for result in graded[name].returns:
            assert "Your formula is right but loses precision on large inputs in float64" in result.message
            assert "subtract each row's maximum before exp" in result.message
            assert "above float64" not in result.message


def test_a_bug_says_the_shift_did_not_help(graded: dict[str, SubmissionResult]) -> None:
    dw = next(r for r in graded["bug_global_max_sign.py"].returns if r.name == "dW")
    assert "still wrong when each row of W is moved by a constant" in dw.message
    assert "a mistake in the formula" in dw.message


def test_the_shift_is_derived_from_the_graph(exercise: Exercise, references: References) -> None:
    shift = invariance.shift_of(exercise, references)
    assert shift == invariance.Shift("W", -1)


def test_with_reg_at_zero_the_shift_is_derived() -> None:
    # No shift of W leaves reg * sum(W * W) as it is; with reg at 0 each row of W moves freely.
    for name in ("cs231n.a1.softmax_loss_vectorized_stress", "eecs498.a2.softmax_loss_vectorized"):
        found = load_exercise(exercise_folder(name))
        refs = compute_references(found, make_trials(found, 0, 4))
        assert invariance.shift_of(found, refs) == invariance.Shift("W", -1, zeroed="reg")


def test_a_penalty_that_no_input_turns_off_gives_no_shift(tmp_path: Path) -> None:
    # The stress exercise with a penalty of fixed weight: reg at 0 leaves it, so no invariance is derived.
    folder = tmp_path / "fixed_penalty"
    shutil.copytree(exercise_folder("cs231n.a1.softmax_loss_vectorized_stress"), folder)
    spec = folder / "exercise.yaml"
    text = spec.read_text()
    assert "loss = data_loss + reg * sum(W * W)" in text
    spec.write_text(
        text.replace("loss = data_loss + reg * sum(W * W)", "loss = data_loss + 0.001 * sum(W * W)")
    )
    fixed = load_exercise(folder)
    refs = compute_references(fixed, make_trials(fixed, 0, 4))
    assert invariance.shift_of(fixed, refs) is None


def test_scores_handed_out_directly_shift_by_rows() -> None:
    softmax = load_exercise(EXERCISES / "basics" / "softmax_large")
    refs = compute_references(softmax, make_trials(softmax, 0, 4))
    shift = invariance.shift_of(softmax, refs)
    assert shift == invariance.Shift("z", -1)
    moved = shift.moved(refs.trials[0])
    tops = moved.inputs["z"].max(axis=1)
    assert np.all((np.abs(tops) >= 0.5) & (np.abs(tops) <= 2.0))  # small, and never 0
    assert moved.inputs["y"] is refs.trials[0].inputs["y"]


def test_moderate_inputs_are_not_moved(references: References) -> None:
    # On moderate inputs float64's exp neither over- nor underflows: no failure there is one of range.
    shift = invariance.Shift("x", -1)
    trial = make_trials(load_exercise(exercise_folder("cs231n.a2.softmax_loss")), 0, 1)[0]
    assert not shift.large(trial)
    assert invariance.Shift("W", -1).large(references.trials[0])  # W's rows near 100


def test_the_cli_tells_the_student() -> None:
    done = grader_run("check", HERE, VARIANTS / "global_max.py", "--json", "--trials", "60")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    result = result[0] if isinstance(result, list) else result
    verdicts = {r["name"]: r["verdict"] for r in result["returns"]}
    assert verdicts == {"loss": "instability", "dW": "instability"}
    assert all("loses precision on large inputs in float64" in r["message"] for r in result["returns"])


# --- with a regularisation term: the stress exercise ----------------------------------------------------

REG_VARIANTS = HERE / "reg_variants"
REG_EXPECTED = {
    "global_max.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.INSTABILITY},
    "global_max_by_hand.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.INSTABILITY},
    # the loss is right (and unstable); the gradient's reg term is wrong where nothing underflows
    "bug_reg_factor.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.LOGIC},
    "bug_no_reg.py": {"loss": Verdict.LOGIC, "dW": Verdict.LOGIC},
    # the data gradient is wrong with reg at 0 and W moved, where the answer is that of reg at 0
    "bug_sign.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.LOGIC},
    "bug_no_mean.py": {"loss": Verdict.INSTABILITY, "dW": Verdict.LOGIC},
}


@pytest.fixture(scope="module")
def stress() -> Exercise:
    return load_exercise(exercise_folder("cs231n.a1.softmax_loss_vectorized_stress"))


@pytest.fixture(scope="module")
def reg_graded(stress: Exercise) -> dict[str, SubmissionResult]:
    references = compute_references(stress, make_trials(stress, 0, TRIALS))
    results = {}
    for name in REG_EXPECTED:
        submission = submission_from_path(REG_VARIANTS / name, stress.spec.entry)
        results[name] = grade(stress, submission, Settings(0), references=references)
    return results


@pytest.mark.parametrize("name", list(REG_EXPECTED))
def test_verdicts_with_reg(reg_graded: dict[str, SubmissionResult], name: str) -> None:
    verdicts = {r.name: r.verdict for r in reg_graded[name].returns}
    assert verdicts == REG_EXPECTED[name], {r.name: r.message for r in reg_graded[name].returns}


def test_with_reg_the_student_reads_what_was_found(reg_graded: dict[str, SubmissionResult]) -> None:
    for result in reg_graded["global_max_by_hand.py"].returns:
        assert "right when reg is 0 and each row of W is moved by a constant" in result.message
        assert "fails as before when reg is 0 and nothing is moved" in result.message
        assert "loses precision on large inputs in float64" in result.message
    dw = next(r for r in reg_graded["bug_reg_factor.py"].returns if r.name == "dW")
    assert "still wrong when each row of W is moved by a constant with reg as given" in dw.message
    assert "the reg term is wrong" in dw.message
    sign = next(r for r in reg_graded["bug_sign.py"].returns if r.name == "dW")
    assert "still wrong when reg is 0 and each row of W is moved by a constant" in sign.message


# --- the rule alone, on synthetic runs --------------------------------------------------------------------

SPEC = ReturnSpec(name="g", value="g")
SHIFT = invariance.Shift("z", -1)
TORCH_RAISED = TorchRefused("TypeError: can't convert np.ndarray of type numpy.longdouble")


def decided(expected: np.ndarray, got: np.ndarray, shifted: np.ndarray | str | None) -> Comparison:
    """A float64 trial beyond rounding, whose rerun at float64 gave the same values and whose extended
    rerun raised (torch code), decided with its run on shifted inputs (None: none was run)."""
    spread = np.zeros_like(expected)
    first = compare(0, SPEC, expected, got, "float64", spread)
    assert first.verdict is Verdict.LOGIC and first.precision is Precision.FLOAT64
    moved = (
        None
        if shifted is None
        else (SHIFT, Refused(shifted) if isinstance(shifted, str) else Answered(shifted, "float64"))
    )
    return resolve_with_rerun(
        first, SPEC, expected, spread, got, Answered(got, "float64"), TORCH_RAISED, moved
    )


def values(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=(3, 4))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nan=st.booleans())
def test_right_on_shifted_inputs_is_instability(seed: int, nan: bool) -> None:
    expected = values(seed)
    got = expected * (1 + 1e-6)  # subnormal intermediates: a few digits left
    if nan:
        got[0] = np.nan  # a row whose exp underflowed to 0 everywhere: 0 / 0
    judged = decided(expected, got, expected + 2 * U64 * expected)
    assert judged.verdict is Verdict.INSTABILITY
    assert judged.rerun is (RerunOutcome.RANGE_SHIFTED if nan else RerunOutcome.RIGHT_SHIFTED)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), factor=st.sampled_from([-1.0, 0.5, 2.0, 0.9, 1.001]), nan=st.booleans()
)
def test_wrong_on_shifted_inputs_is_logic_even_where_it_was_nan(seed: int, factor: float, nan: bool) -> None:
    expected = values(seed)
    got = expected * factor
    if nan:
        got[0] = np.nan  # NaN alone would be read as float64's range
    judged = decided(expected, got, expected * factor)
    assert judged.verdict is Verdict.LOGIC
    assert judged.rerun is RerunOutcome.WRONG_SHIFTED


def test_a_shifted_run_that_raised_shows_nothing() -> None:
    expected = values(0)
    judged = decided(expected, expected * 2.0, "AssertionError: inputs too small")
    assert judged.verdict is Verdict.LOGIC
    assert judged.rerun is RerunOutcome.RERUN_FAILED
    assert "AssertionError" in judged.note


def test_without_a_shift_it_is_judged_as_before() -> None:
    expected = values(0)
    judged = decided(expected, expected * (1 + 1e-6), None)
    assert judged.verdict is Verdict.LOGIC  # no precision above float64, no invariance: a mistake


def test_right_only_when_shifted_on_every_trial_is_logic() -> None:
    """Finite values wrong on every trial and right only when shifted (a formula that differs on every
    large input, as scores clipped at 700 do where every trial's scores pass 700) are no range failure;
    with one trial right as it was, the others are instability; NaN made right stays instability."""
    expected = values(0)
    finite = decided(expected, expected * (1 + 1e-6), expected)
    nan = decided(expected, np.full_like(expected, np.nan), expected)
    assert (finite.rerun, nan.rerun) == (RerunOutcome.RIGHT_SHIFTED, RerunOutcome.RANGE_SHIFTED)
    alone = finite_somewhere(Compared((), {0: finite}))
    assert alone.others[0].verdict is Verdict.LOGIC
    assert alone.others[0].rerun is RerunOutcome.ONLY_SHIFTED
    assert "right only with its inputs moved to small values" in alone.others[0].note
    right = replace(compare(1, SPEC, expected, expected, "float64", np.zeros_like(expected)), trial=1)
    assert right.verdict is Verdict.PASS
    beside = finite_somewhere(Compared((), {0: finite, 1: right}))
    assert beside.others[0].verdict is Verdict.INSTABILITY
    assert finite_somewhere(Compared((), {0: nan})).others[0].verdict is Verdict.INSTABILITY


# --- the rule with a zeroed input, on synthetic runs ------------------------------------------------------

ZEROED_SHIFT = invariance.Shift("z", -1, zeroed="reg")


def decided_zeroed(
    expected: np.ndarray, got: np.ndarray, a: np.ndarray | str, b: np.ndarray | str, c: np.ndarray | str
) -> Comparison:
    """A float64 trial beyond rounding decided by probes A (reg 0), B (reg 0, moved) and C (moved), the
    values due at A (and B) being `expected` / 2 and at C `expected` * 3."""
    spread = np.zeros_like(expected)
    first = compare(0, SPEC, expected, got, "float64", spread)

    def run(r: np.ndarray | str) -> Rerun:
        return Refused(r) if isinstance(r, str) else Answered(r, "float64")

    due = invariance.ZeroedDue({"g": expected / 2}, {"g": spread}, {"g": expected * 3}, {"g": spread})
    zeroed = ZeroedRuns(run(a), run(b), due)
    return resolve_with_rerun(
        first,
        SPEC,
        expected,
        spread,
        got,
        Answered(got, "float64"),
        TORCH_RAISED,
        (ZEROED_SHIFT, run(c)),
        zeroed,
    )


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_with_a_zeroed_input_only_b_and_c_right_and_a_wrong_is_instability(seed: int) -> None:
    expected = values(seed)
    got = expected * (1 + 1e-6)
    at_zero, moved = expected / 2, expected * 3
    unstable = decided_zeroed(expected, got, at_zero * (1 + 1e-6), at_zero, moved)
    assert unstable.verdict is Verdict.INSTABILITY and unstable.rerun is RerunOutcome.RIGHT_SHIFTED
    assert "right when reg is 0 and each row of z is moved by a constant" in unstable.note
    # the failure does not come back with reg at 0: it lies in the reg term
    assert decided_zeroed(expected, got, at_zero, at_zero, moved).verdict is Verdict.LOGIC
    # wrong with reg at 0 and moved: the data term is wrong
    assert decided_zeroed(expected, got, at_zero * 2, at_zero * 2, moved).verdict is Verdict.LOGIC
    # wrong moved with reg as given, right at 0: the reg term is wrong
    wrong_reg = decided_zeroed(expected, got, at_zero * 2, at_zero, moved * 1.01)
    assert wrong_reg.verdict is Verdict.LOGIC and "the reg term is wrong" in wrong_reg.note
    raised = decided_zeroed(expected, got, "ValueError: reg must be positive", at_zero, moved)
    assert raised.verdict is Verdict.LOGIC and raised.rerun is RerunOutcome.RERUN_FAILED
    assert "ValueError: reg must be positive" in raised.note
