"""The Monte Carlo spread computed only where judging needs it (issue 41): a trial's spread computed among a
few is the one the whole pass gives it, bit for bit; DeferredSpreads computes what is missing, once; a
hand-in graded with deferred spreads gets the verdicts, scores and messages of one graded with them all
(the lower bound stands in only where every trial passes, and only the envelope's size in the message
moves: it is never over 1 there); the references a cold check keeps say which spreads they hold, verified
as any cache file; and a cold `grader check` of a numpy hand-in computes the spreads of a few trials,
keeps them, and its next check computes none (real CLI)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import exercise_folder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.exercise import reference_cache
from grader.exercise.expected import DeferredSpreads, Expected, References
from grader.exercise.reference import compute_references, compute_spreads, reference_returns
from grader.exercise.reference_format import decoded_spreads, encoded_spreads, load, write
from grader.exercise.settings import ReferenceCache, Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.outcomes import Verdict
from grader.results import SubmissionResult

TRIALS = 40


def _same(got: Mapping[int, Expected], want: Mapping[int, Expected], trials: Collection[int]) -> bool:
    return all(
        np.array_equal(got[t][name], want[t][name], equal_nan=True) for t in trials for name in want[t]
    )


# Padded batches (rnn's time steps), batches whose values depend on which trials they stack (batchnorm,
# graph2), one trial per batch (conv), and an instructor's reference file (dropout).
@pytest.mark.parametrize(
    "exercise_id",
    ["cs231n.a3.rnn", "cs231n.a2.batchnorm", "graph2", "cs231n.a2.conv_naive", "cs231n.a2.dropout"],
)
def test_a_trials_spread_among_a_few_is_the_whole_pass_own(exercise_id: str) -> None:
    exercise = load_exercise(exercise_folder(exercise_id))
    trials = make_trials(exercise, 2, TRIALS)
    whole = compute_references(exercise, trials)
    for wanted in ({0}, {3, 17, 18, 39}, set(range(0, TRIALS, 3))):
        few = compute_spreads(exercise, trials, whole.expected, wanted)
        assert set(few) == wanted
        assert _same(few, whole.spread, wanted)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=st.sets(st.integers(0, 59), min_size=1, max_size=12))
def test_any_few_trials_get_the_spreads_of_the_whole_pass(wanted: set[int], graph2: Exercise) -> None:
    trials = make_trials(graph2, 7, 60)
    expected = reference_returns(graph2, trials)
    whole = compute_spreads(graph2, trials, expected)
    assert _same(compute_spreads(graph2, trials, expected, wanted), whole, wanted)


class _Counted:
    """A fill that computes in this process and records what it was asked for."""

    def __init__(self, exercise: Exercise, references: References) -> None:
        self.exercise, self.references = exercise, references
        self.asked: list[list[int]] = []

    def __call__(self, wanted: Sequence[int]) -> dict[int, Expected]:
        self.asked.append(list(wanted))
        trials, expected = self.references.trials, self.references.expected
        return compute_spreads(self.exercise, trials, expected, set(wanted))


def _deferred(exercise: Exercise, seed: int, count: int) -> tuple[References, References, _Counted]:
    """The whole references, the same with their spreads deferred, and the deferred ones' fill."""
    whole = compute_references(exercise, make_trials(exercise, seed, count))
    fill = _Counted(exercise, whole)
    spreads = DeferredSpreads([t.index for t in whole.trials], {}, fill)
    return whole, References(whole.trials, whole.expected, spreads), fill


def test_deferred_spreads_compute_what_is_missing_once(graph2: Exercise) -> None:
    whole, deferred, fill = _deferred(graph2, 0, 20)
    spreads = deferred.spread
    assert isinstance(spreads, DeferredSpreads)
    assert len(spreads) == 20 and 19 in spreads and 20 not in spreads and not spreads.complete
    spreads.fill([3, 5])
    spreads.fill([5, 3])  # known already: nothing computed
    assert fill.asked == [[3, 5]] and spreads.missing({3, 4, 5}) == [4]
    bound = spreads.lower_bound(deferred)
    assert bound is spreads.lower_bound(deferred)  # the same view while nothing more is known
    assert _same(bound.spread, whole.spread, [3, 5])
    assert all(not np.any(v) for v in bound.spread[4].values())
    assert all(v.shape == whole.expected[4][n].shape for n, v in bound.spread[4].items())
    assert _same(spreads, whole.spread, [7])  # a look-up of one not known computes every one missing
    assert fill.asked[1] == [t for t in range(20) if t not in (3, 5)] and spreads.complete
    assert spreads.lower_bound(deferred) is not bound
    with pytest.raises(KeyError):
        spreads[20]


def _graded(exercise: Exercise, path: Path, references: References, seed: int) -> SubmissionResult:
    submission = submission_from_path(path, exercise.spec.entry)
    return grade(exercise, submission, Settings(seed, len(references.trials)), references=references)


def _verdicts(result: SubmissionResult) -> str:
    """Every verdict, score, failing entry and named mistake, and the message of every return judged by its
    values but not passed (a pass's gives its largest envelope ratio, which may move; an autograd check's,
    the checked worker's changed gradients, drawn afresh in each run)."""
    described: list[object] = [result.passed, result.error]
    for r in result.returns:
        described.append((r.name, r.verdict, r.score, r.failed_trials, r.misconception, r.failing_entries))
        if r.verdict not in (Verdict.PASS, Verdict.AUTOGRAD, Verdict.NUMERICAL):
            described.append((r.message, r.max_ratio, r.case, r.shrink, r.near_misses))
    return repr(described)


# Right, rounding (float32), unstable, and wrong in several ways, on numpy and torch exercises.
HANDINS = [
    ("softmax_large", "solution.py"),
    ("softmax_large", "wrong/naive.py"),
    ("softmax_large", "wrong/sign.py"),
    ("softplus", "wrong/naive_float32.py"),
    ("softplus", "wrong/float32_user_grad.py"),
    ("cs231n.a2.batchnorm", "solution.py"),
    ("batchnorm_backward", "wrong/no_variance_path.py"),
    ("cs231n.a2.layernorm", "solution.py"),
    ("graph2", "solution.py"),
    (
        "cs231n.a2.affine",
        "wrong/autograd_backward.py",
    ),  # passes its ordinary run; the autograd check fails it
]


@pytest.mark.parametrize(("exercise_id", "handin"), HANDINS, ids=[f"{e}:{h}" for e, h in HANDINS])
def test_deferred_spreads_judge_as_all_of_them(exercise_id: str, handin: str) -> None:
    exercise = load_exercise(exercise_folder(exercise_id))
    path = exercise.root / handin
    whole, deferred, fill = _deferred(exercise, 1, TRIALS)
    right = _graded(exercise, path, whole, 1)
    got = _graded(exercise, path, deferred, 1)
    # Right by its values on every trial (an autograd check's verdict aside, which judges no value).
    right_values = all(r.verdict in (Verdict.PASS, Verdict.AUTOGRAD) for r in right.returns)
    assert _verdicts(got) == _verdicts(right)
    assert isinstance(deferred.spread, DeferredSpreads)
    if right_values:  # the unsettled trials' spreads computed, in one go; each envelope no smaller, under 1
        assert len(fill.asked) == 1
        # softmax_large's are all unsettled: cancellation in every entry (the spread is its envelope)
        assert exercise_id == "softmax_large" or len(fill.asked[0]) < TRIALS / 2
        for mine, theirs in zip(got.returns, right.returns, strict=True):
            if theirs.verdict is Verdict.PASS:
                assert theirs.max_ratio <= mine.max_ratio <= 1.0
    else:  # every one, as without deferral
        assert deferred.spread.complete


def test_references_kept_with_some_spreads_say_which(graph2: Exercise, tmp_path: Path) -> None:
    whole, deferred, _ = _deferred(graph2, 0, 12)
    assert isinstance(deferred.spread, DeferredSpreads)
    deferred.spread.fill([2, 9])
    buffer = io.BytesIO()
    write(buffer, graph2, deferred, "key")
    assert load(io.BytesIO(buffer.getvalue()), graph2, "key") is None  # never taken for whole ones
    read = load(io.BytesIO(buffer.getvalue()), graph2, "key", partial=True)
    assert read is not None and isinstance(read.spread, DeferredSpreads)
    assert sorted(read.spread.known()) == [2, 9] and _same(read.spread.known(), whole.spread, [2, 9])
    assert _same(read.expected, whole.expected, range(12))


def test_spreads_that_are_not_those_asked_for_are_refused(graph2: Exercise) -> None:
    whole, _, _ = _deferred(graph2, 0, 6)
    sent = encoded_spreads(graph2, {t: whole.spread[t] for t in (1, 4)})
    assert _same(decoded_spreads(sent, graph2, [1, 4], whole.expected) or {}, whole.spread, [1, 4])
    assert decoded_spreads(sent, graph2, None, whole.expected) is not None
    assert decoded_spreads(sent, graph2, [1], whole.expected) is None
    assert decoded_spreads(sent, graph2, [4, 1], whole.expected) is None
    assert decoded_spreads(sent[:-9], graph2, [1, 4], whole.expected) is None
    negative = {t: {n: -np.ones_like(v) for n, v in whole.spread[t].items()} for t in (1, 4)}
    assert decoded_spreads(encoded_spreads(graph2, negative), graph2, [1, 4], whole.expected) is None
    shaped = {t: {n: np.zeros(3) for n in whole.spread[t]} for t in (1, 4)}
    assert decoded_spreads(encoded_spreads(graph2, shaped), graph2, [1, 4], whole.expected) is None
    elsewhere = {t + 10: whole.spread[t] for t in (1, 4)}
    assert decoded_spreads(encoded_spreads(graph2, elsewhere), graph2, None, whole.expected) is None


def test_the_cache_keeps_a_checks_spreads_beside_its_values(graph2: Exercise, tmp_path: Path) -> None:
    """Kept beside the deferred references' file and read back with it (the check path only: a class run
    takes whole references alone, and computes them); written by anyone else, not believed; gone once the
    whole references are stored."""
    cache = ReferenceCache(tmp_path)
    whole, deferred, _ = _deferred(graph2, 0, 10)
    assert isinstance(deferred.spread, DeferredSpreads)
    reference_cache.store(cache, graph2, 0, deferred)
    deferred.spread.fill([1, 6])
    reference_cache.store_spreads(cache, graph2, 0, deferred)
    assert reference_cache.lookup(cache, graph2, 0, 10) is None
    read = reference_cache.lookup(cache, graph2, 0, 10, partial=True)
    assert read is not None and isinstance(read.spread, DeferredSpreads)
    assert _same(read.spread.known(), whole.spread, [1, 6]) and sorted(read.spread.known()) == [1, 6]
    beside = next(tmp_path.glob("*.spreads.npz"))
    data = bytearray(beside.read_bytes())
    data[-20] ^= 1
    beside.write_bytes(bytes(data))
    read = reference_cache.lookup(cache, graph2, 0, 10, partial=True)
    assert read is not None and isinstance(read.spread, DeferredSpreads) and not read.spread.known()
    reference_cache.store(cache, graph2, 0, whole)
    assert not list(tmp_path.glob("*.spreads.npz"))
    stored = reference_cache.lookup(cache, graph2, 0, 10)
    assert stored is not None and not isinstance(stored.spread, DeferredSpreads)


def test_a_cold_check_of_numpy_code_computes_a_few_spreads_and_keeps_them(tmp_path: Path) -> None:
    """`grader check` of a torch-free layers.py with an empty cache: its grader imports no torch, the
    spreads of the few trials its correct answers leave unsettled are computed and kept beside the
    expected values, and the next check computes nothing ($GRADER_REFERENCES=stored refuses any
    computation) and gives the same verdicts; a wrong hand-in's check, which needs every spread, is refused
    there."""
    course = exercise_folder("cs231n.a2.affine").parent
    handin = tmp_path / "layers.py"
    names = ("affine", "layernorm")
    handin.write_text("\n\n".join((course / n / "solution.py").read_text() for n in names), encoding="utf-8")
    check = [sys.executable, "-m", "grader", "check", str(course)]
    options = ["--trials", str(TRIALS), "--json"]
    command = [*check[:1], "-X", "importtime", *check[1:], str(handin), *options]
    environment = {**os.environ, "GRADER_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "grader.grading" in imported and "torch" not in imported
    assert len(list((tmp_path / "cache").glob("*.spreads.npz"))) == 2
    cache = ReferenceCache(tmp_path / "cache")
    for name in names:
        exercise = load_exercise(course / name)
        kept = reference_cache.lookup(cache, exercise, 0, TRIALS, partial=True)
        assert kept is not None and isinstance(kept.spread, DeferredSpreads)
        known = kept.spread.known()
        assert 0 < len(known) < TRIALS
        assert _same(known, compute_references(exercise, kept.trials).spread, known)
    again = subprocess.run(
        [*check, str(handin), *options],
        capture_output=True,
        text=True,
        env={**environment, "GRADER_REFERENCES": "stored"},
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert [line for line in again.stdout.splitlines() if '"passed": true' in line] == [
        line for line in done.stdout.splitlines() if '"passed": true' in line
    ]
    # A wrong hand-in needs every spread: computing them is what $GRADER_REFERENCES=stored forbids.
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "\n\n".join(
            p.read_text() for p in (course / "affine/wrong/db_mean.py", course / "layernorm/solution.py")
        ),
        encoding="utf-8",
    )
    refused = subprocess.run(
        [*check, str(wrong), *options],
        capture_output=True,
        text=True,
        env={**environment, "GRADER_REFERENCES": "stored"},
        timeout=600,
        check=False,
    )
    assert refused.returncode == 2, refused.stdout[-3000:] + refused.stderr[-3000:]
    assert "no stored references (the spreads of" in refused.stderr
    assert "GRADER_REFERENCES=stored forbids computing them" in " ".join(refused.stderr.split())
