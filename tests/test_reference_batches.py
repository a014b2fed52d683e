"""References computed in batches across sizes equal those computed size by size.

The Monte Carlo pass pads trials of different sizes into one batch where that changes no expected value
(reference.py checks it, bit for bit, on the batch itself); the expected values always come from
per-size batches. Here: random trials of exercises with several sizes, computed together and one at a
time; and the padding planner's choices on exercises where a size may or may not be padded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import EXERCISES, write_exercise
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.exercise import padding, reference
from grader.exercise.expected import Expected, References
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import Trial, make_trial

BATCHED = {
    "rnn": EXERCISES / "cs231n" / "a3" / "rnn",  # an instructor's loop over time steps
    "affine_backward": EXERCISES / "basics" / "affine_backward",  # sizes from 1
    "dropout": EXERCISES / "cs231n" / "a2" / "dropout",  # a numpy mask under a vmap rule
    "spatial_groupnorm": EXERCISES / "cs231n" / "a2" / "spatial_groupnorm",  # reshapes and group means
}


@pytest.fixture(scope="module")
def exercises() -> dict[str, Exercise]:
    return {name: load_exercise(folder) for name, folder in BATCHED.items()}


def _size_by_size(exercise: Exercise, trials: list[Trial]) -> References:
    """Each size's trials in a call of their own: nothing to pad. (Not one by one: vmap's reductions
    may group their terms by the batch's length, and a trial's expected values then move by an ulp with
    the trials of its size beside it, as they did before padding.)"""
    expected: dict[int, Expected] = {}
    spread: dict[int, Expected] = {}
    for group in padding.merged(trials, ()):
        alone = reference.compute_references(exercise, group)
        expected.update(alone.expected)
        spread.update(alone.spread)
    return References(tuple(trials), expected, spread)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(BATCHED)),
    seed=st.integers(0, 2**31),
    indices=st.lists(st.integers(0, 5000), min_size=24, max_size=48, unique=True),
)
def test_batched_references_equal_size_by_size(
    exercises: dict[str, Exercise], name: str, seed: int, indices: list[int]
) -> None:
    exercise = exercises[name]
    trials = [make_trial(exercise, seed, i) for i in indices]
    together = reference.compute_references(exercise, trials)
    alone = _size_by_size(exercise, trials)
    batches = reference._envelope_batches(exercise, trials, together.expected)
    padded = {t.index for b in batches if b.padded for t in b.trials}
    for trial in trials:
        for ret, value in alone.expected[trial.index].items():
            np.testing.assert_array_equal(together.expected[trial.index][ret], value, err_msg=f"{ret}")
            mine, theirs = together.spread[trial.index][ret], alone.spread[trial.index][ret]
            assert mine.shape == theirs.shape
            # an entry that rounds nowhere (a spread of 0) does so in any batch
            np.testing.assert_array_equal(mine == 0, theirs == 0, err_msg=f"{ret}")
            if trial.index not in padded:  # a batch of one size: the same values, the same noise
                np.testing.assert_array_equal(mine, theirs, err_msg=f"{ret}")


def test_padding_merges_sizes_that_change_nothing(exercises: dict[str, Exercise]) -> None:
    """rnn's sizes: padded in the batch and the input and hidden widths (zeros add nothing there), not in
    time (a padded step's zero gradients are added, and the Monte Carlo mode perturbs every addition),
    and a batch of one example stays apart (its db is summed by no operation)."""
    exercise = exercises["rnn"]
    trials = [make_trial(exercise, 0, i) for i in range(200)]
    expected = reference.reference_returns(exercise, trials)
    batches = reference._envelope_batches(exercise, trials, expected)
    groups = len({t.size_key for t in trials})
    assert len(batches) < groups / 4
    assert sorted(t.index for b in batches for t in b.trials) == list(range(200))
    for batch in batches:
        assert len({t.sizes["T"] for t in batch.trials}) == 1
        assert len({t.sizes["N"] == 1 for t in batch.trials}) == 1


def test_a_size_that_moves_entries_is_not_padded(tmp_path: Path) -> None:
    """A reshape moves each entry by the sizes, and a mean counts them: padded, either would change every
    value, so the planner keeps those trials apart and the references are those of one by one."""
    spec = """
id: moved
title: reshape then a mean
entry: f
args: [x, w]
sizes:
  N: {min: 1, max: 3}
  A: {min: 2, max: 3}
  B: {min: 2, max: 3}
  D: A * B
inputs:
  x: {shape: [N, A, B], dist: normal}
  w: {shape: [D], dist: normal}
graph: |
  y = reshape(x, (N, D)) * w
  f = mean(tanh(y))
returns:
  - {name: f, value: f}
  - {name: dx, grad: {of: f, wrt: x}}
trials: 40
solution: null
starter: null
"""
    exercise = load_exercise(write_exercise(tmp_path / "moved", spec))
    trials = [make_trial(exercise, 0, i) for i in range(40)]
    expected = reference.reference_returns(exercise, trials)
    for batch in reference._envelope_batches(exercise, trials, expected):
        assert len({(t.sizes["A"], t.sizes["B"], t.sizes["N"]) for t in batch.trials}) == 1
    together = reference.compute_references(exercise, trials)
    for trial in trials[:8]:
        alone = reference.compute_references(exercise, [trial])
        for ret in ("f", "dx"):
            np.testing.assert_array_equal(
                together.expected[trial.index][ret], alone.expected[trial.index][ret]
            )
            np.testing.assert_array_equal(together.spread[trial.index][ret], alone.spread[trial.index][ret])


def test_dropouts_reference_is_batched_by_vmap(
    exercises: dict[str, Exercise], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its numpy mask comes from a vmap rule: no group falls back to the trial-by-trial loop, whose
    gradient accumulations the Monte Carlo mode would perturb too."""

    def no_loop(*args: object) -> object:
        raise AssertionError("vmap could not batch the reference")

    monkeypatch.setattr(reference, "_loop", no_loop)
    exercise = exercises["dropout"]
    trials = [make_trial(exercise, 0, i) for i in range(30)]
    references = reference.compute_references(exercise, trials)
    for trial in trials:
        x, p, seed = (trial.inputs[k] for k in ("x", "p", "seed"))
        keep = np.random.RandomState(int(seed)).rand(*x.shape) < float(p)
        np.testing.assert_array_equal(references.expected[trial.index]["out"], x * keep / p)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    seed=st.integers(0, 2**32 - 1),
    sample=st.integers(0, 7),
    transposed=st.booleans(),
)
def test_the_numpy_hash_is_the_torch_hash(shape: list[int], seed: int, sample: int, transposed: bool) -> None:
    """The Monte Carlo noise, hashed in numpy for speed, is the torch formula's to the bit: for a 0-d
    result, a transposed (non-contiguous) one, and per-copy sample numbers."""
    value = torch.randn(tuple(shape), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    if transposed and value.dim() >= 2:
        value = value.transpose(0, -1)
    value = value * 10.0 ** float(seed % 9 - 4)
    assert np.array_equal(
        reference._numpy_random(value.numpy(), sample), reference._pseudo_random(value, sample).numpy()
    )
    if value.dim():
        copies = torch.arange(value.shape[0]).reshape(-1, *[1] * (value.dim() - 1)) + sample
        assert np.array_equal(
            reference._numpy_random(value.numpy(), copies.numpy()),
            reference._pseudo_random(value, copies).numpy(),
        )
    magnitude = value.abs() + 1.0
    exact = value + reference.NOISE * magnitude * reference._pseudo_random(value, sample)
    assert torch.equal(reference._perturbed(value, magnitude, reference.NOISE, sample), exact)


def test_a_padded_batch_places_each_trial_at_the_origin(exercises: dict[str, Exercise]) -> None:
    exercise = exercises["rnn"]
    every = [make_trial(exercise, 0, i) for i in range(100)]
    trials = max(padding.merged(every, ["D", "H"]), key=lambda g: len({t.size_key for t in g}))
    batch = padding.padded_batch(exercise, trials, ["D", "H"])
    assert batch is not None and batch.padded
    assert padding.padded_batch(exercise, every[:5], ["D", "H"]) is None  # they differ in N or T
    for i, trial in enumerate(trials):
        for name, value in trial.inputs.items():
            stacked = batch.inputs[name][i]
            part = padding.region(value, stacked)
            assert part is not None
            np.testing.assert_array_equal(part, value)
            assert stacked.sum() == pytest.approx(value.sum())  # zeros elsewhere


def test_a_size_of_one_is_never_padded_to_more(exercises: dict[str, Exercise]) -> None:
    """torch squeezes an axis of one entry where it sums a longer one (affine_backward's db for N = 1):
    such trials are batched apart from those the padding would give more entries."""
    exercise = exercises["affine_backward"]
    trials = [make_trial(exercise, 0, i) for i in range(300)]
    for group in padding.merged(trials, ["N", "D", "M"]):
        for size in ("N", "D", "M"):
            assert len({t.sizes[size] == 1 for t in group}) == 1
    assert len(padding.merged(trials, ["N", "D", "M"])) == 8  # each of N, D, M: 1 or more
