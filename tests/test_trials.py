"""Trials: everything derives from (seed, exercise id, trial index), within the spec's ranges, read-only."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import write_exercise
from hypothesis import assume, given
from hypothesis import strategies as st

from grader.errors import SpecError
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import Trial, _entropy_words, _exercise_key, make_trial, make_trials

seeds = st.integers(min_value=0, max_value=2**63 - 1)
indices = st.integers(min_value=0, max_value=10**6)


def same(a: Trial, b: Trial) -> bool:
    return (
        a.index == b.index
        and dict(a.sizes) == dict(b.sizes)
        and a.inputs.keys() == b.inputs.keys()
        and all(
            a.inputs[k].dtype == b.inputs[k].dtype and np.array_equal(a.inputs[k], b.inputs[k])
            for k in a.inputs
        )
    )


@given(seed=seeds, index=indices)
def test_same_seed_id_index_gives_the_same_trial(
    graph2: Exercise, ce_exercise: Exercise, seed: int, index: int
) -> None:
    for exercise in (graph2, ce_exercise):
        assert same(make_trial(exercise, seed, index), make_trial(exercise, seed, index))


@given(seed=seeds, count=st.integers(min_value=1, max_value=20), data=st.data())
def test_a_trial_does_not_depend_on_the_others(
    graph2: Exercise, seed: int, count: int, data: st.DataObject
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=count - 1))
    batch = make_trials(graph2, seed, count)
    assert [t.index for t in batch] == list(range(count))
    assert same(batch[index], make_trial(graph2, seed, index))
    (only,) = make_trials(graph2, seed, count, only=index)  # replaying one trial gives that very trial
    assert same(only, batch[index])


@given(a=seeds, b=seeds, index=indices)
def test_different_seeds_give_different_inputs(graph2: Exercise, a: int, b: int, index: int) -> None:
    assume(a != b)
    assert not same(make_trial(graph2, a, index), make_trial(graph2, b, index))


@given(seed=seeds, i=indices, j=indices)
def test_different_indices_give_different_inputs(graph2: Exercise, seed: int, i: int, j: int) -> None:
    assume(i != j)
    first, second = make_trial(graph2, seed, i), make_trial(graph2, seed, j)
    assert not np.array_equal(first.inputs["x_np"].ravel()[:1], second.inputs["x_np"].ravel()[:1])


def test_different_exercise_ids_give_different_inputs(graph2: Exercise, tmp_path: Path) -> None:
    other = Exercise(
        spec=graph2.spec.model_copy(update={"id": "graph2_copy"}), root=tmp_path, program=graph2.program
    )
    assert not same(make_trial(graph2, 0, 0), make_trial(other, 0, 0))


def test_trials_are_the_same_in_another_process(graph2: Exercise) -> None:
    """A failure replays from its seed in a later run: no per-process state (hash seeds) enters a trial."""
    script = (
        "import hashlib, sys\n"
        "from pathlib import Path\n"
        "from grader.exercise.spec import load_exercise\n"
        "from grader.exercise.trials import make_trials\n"
        "exercise = load_exercise(Path(sys.argv[1]))\n"
        "digest = hashlib.sha256()\n"
        "for t in make_trials(exercise, 12345, 20):\n"
        "    digest.update(repr(sorted(t.sizes.items())).encode())\n"
        "    for name in sorted(t.inputs):\n"
        "        digest.update(t.inputs[name].tobytes())\n"
        "print(digest.hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script, str(graph2.root)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout.strip()
        for hash_seed in ("1", "2")
    }
    assert len(digests) == 1
    digest = hashlib.sha256()
    for t in make_trials(graph2, 12345, 20):
        digest.update(repr(sorted(t.sizes.items())).encode())
        for name in sorted(t.inputs):
            digest.update(t.inputs[name].tobytes())
    assert digests == {digest.hexdigest()}


def test_sizes_stay_within_their_ranges_and_reach_both_ends(graph2: Exercise, ce_exercise: Exercise) -> None:
    for exercise in (graph2, ce_exercise):
        trials = make_trials(exercise, 3, 400)
        for name in exercise.spec.sizes:
            low, high = exercise.size_range(name)
            seen = {t.sizes[name] for t in trials}
            assert seen == set(range(low, high + 1)), (exercise.id, name, seen)


def test_shapes_follow_the_sizes(graph2: Exercise, ce_exercise: Exercise) -> None:
    for trial in make_trials(graph2, 1, 50):
        d = trial.sizes["d"]
        assert trial.inputs["W_np"].shape == (d, d)
        assert trial.inputs["x_np"].shape == (d, 1)
        assert trial.inputs["b_np"].shape == (d, 1)
        assert all(a.dtype == np.float64 for a in trial.inputs.values())
    for trial in make_trials(ce_exercise, 1, 50):
        n, c = trial.sizes["n"], trial.sizes["c"]
        assert trial.inputs["X"].shape == (n, c)
        assert trial.inputs["labels"].shape == (n,)
        assert trial.inputs["lam"].shape == ()


def test_integer_inputs_cover_inclusive_bounds(ce_exercise: Exercise, tmp_path: Path) -> None:
    exercise = load_exercise(
        write_exercise(
            tmp_path / "ints",
            """
        id: ints
        title: integers
        entry: f
        args: [k]
        inputs:
          k: {shape: [400], dist: integer, low: -2, high: 1}
        graph: |
          y = k * 1
        returns:
          - {name: y, value: y}
        solution: null
        starter: null
    """,
        )
    )
    k = make_trial(exercise, 0, 0).inputs["k"]
    assert k.dtype == np.int64
    assert set(np.unique(k).tolist()) == {-2, -1, 0, 1}

    seen: dict[int, set[int]] = {}
    for trial in make_trials(ce_exercise, 0, 300):
        labels = trial.inputs["labels"]
        assert labels.dtype == np.int64
        c = trial.sizes["c"]
        assert labels.min() >= 0 and labels.max() <= c - 1  # high: c - 1 is inclusive
        seen.setdefault(c, set()).update(labels.tolist())
    for c, drawn in seen.items():
        assert drawn == set(range(c)), (c, drawn)


def test_float_distributions(ce_exercise: Exercise) -> None:
    trials = make_trials(ce_exercise, 5, 300)
    W = np.concatenate([t.inputs["W"].ravel() for t in trials])
    assert W.min() >= -1 and W.max() < 1
    assert W.min() < -0.95 and W.max() > 0.95
    G = np.concatenate([t.inputs["G"].ravel() for t in trials])
    assert abs(G.mean() - 1.0) < 0.05
    assert abs(G.std() - 0.5) < 0.05
    assert all(float(t.inputs["lam"]) == 0.25 for t in trials)


def test_uniform_default_range_is_unit_interval(graph2: Exercise) -> None:
    values = np.concatenate([t.inputs["W_np"].ravel() for t in make_trials(graph2, 0, 100)])
    assert values.min() >= 0 and values.max() < 1
    assert values.min() < 0.02 and values.max() > 0.98


def test_inputs_are_read_only(graph2: Exercise, ce_exercise: Exercise) -> None:
    for trial in (make_trial(graph2, 0, 0), make_trial(ce_exercise, 0, 0)):
        for name, array in trial.inputs.items():
            assert not array.flags.writeable, name
            with pytest.raises(ValueError):
                array[...] = 0
            with pytest.raises(ValueError):
                array += 1
    pristine = make_trial(graph2, 0, 0).inputs["W_np"].copy()
    assert np.array_equal(make_trial(graph2, 0, 0).inputs["W_np"], pristine)


DERIVED = """
    id: derived
    title: A valid 1-D correlation, its output length derived from the others
    entry: corr
    args: [x, w, keep]
    sizes:
      L: {min: 4, max: 9}
      K: {min: 1, max: 3}
      T: L - K + 1
    inputs:
      x: {shape: [L], dist: normal}
      w: {shape: [K], dist: normal}
      keep: {shape: [T], dist: bernoulli, p: 0.75}
    graph: |
      y = x[0:T] * w[0] * keep
      loss = sum(y)
    returns:
      - {name: y, value: y}
    trials: 10
    solution: null
    starter: null
"""


def test_a_derived_size_follows_the_drawn_ones_and_a_bernoulli_mask_is_0_or_1(tmp_path: Path) -> None:
    exercise = load_exercise(write_exercise(tmp_path / "derived", DERIVED))
    trials = make_trials(exercise, 0, 60)
    assert all(t.sizes["T"] == t.sizes["L"] - t.sizes["K"] + 1 for t in trials)
    masks = np.concatenate([t.inputs["keep"] for t in trials])
    assert set(np.unique(masks)) == {0.0, 1.0} and 0.6 < masks.mean() < 0.9


@pytest.mark.parametrize(
    ("size", "message"),
    [("T: L - K - 3", "a size must be at least 1"), ("T: L - Q + 1", "Q"), ("T: {min: 1, max: T}", "max")],
)
def test_a_derived_size_is_checked_where_it_is_written(tmp_path: Path, size: str, message: str) -> None:
    folder = write_exercise(tmp_path / "bad", DERIVED.replace("T: L - K + 1", size))
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert message in str(info.value) and "sizes" in str(info.value), info.value


@pytest.mark.parametrize("seed", [0, 1, 7, 2**32 - 1, 2**32, 2**63 - 1])
@pytest.mark.parametrize("index", [0, 1, 999, 2**32 + 5])
def test_the_generators_words_are_numpys_own(seed: int, index: int) -> None:
    """make_trial seeds each trial's generator with the words numpy makes of [seed, exercise, index]
    itself, worked out once per make_trials: the same generator, state for state."""
    key = _exercise_key("cs231n.a2.affine")
    words = np.array([*_entropy_words(seed, key), *_entropy_words(index)], dtype=np.uint32)
    mine = np.random.default_rng(words).bit_generator.state
    assert mine == np.random.default_rng([seed, key, index]).bit_generator.state


def test_a_negative_seed_is_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        _entropy_words(-1)
