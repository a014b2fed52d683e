"""Slips of a backward pass written by hand, derived from the graph: each family computes what the mistaken
code returns, names real-style code through grade(), and never names right values."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import exercise_folder, write_exercise

from grader.exercise.expected import References
from grader.exercise.graph import GraphError, parse
from grader.exercise.reference import compute_references, reference_returns
from grader.exercise.settings import Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.sources import find_references
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.judging.compare import compare_many
from grader.judging.naming.backward_slips import backward_slips
from grader.judging.naming.diagnosis import diagnose
from grader.judging.naming.slips import GraphSlip
from grader.outcomes import MistakeFamily, Verdict
from grader.sandbox.payload import ReturnedArray
from grader.sandbox.report import Returned

HEADER = """
    id: {id}
    title: a small graph
    entry: f
    solution: null
    starter: null
"""

AFFINE = (
    HEADER.format(id="affine_demo")
    + """
    args: [x, w, b, dout]
    sizes: {N: {min: 2, max: 5}, D: {min: 2, max: 5}, M: {min: 2, max: 5}}
    inputs:
      x: {shape: [N, D], dist: normal}
      w: {shape: [D, M], dist: normal}
      b: {shape: [M], dist: normal}
      dout: {shape: [N, M], dist: normal}
    graph: |
      out = x @ w + b
    returns:
      - {name: out, value: out}
      - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
      - {name: dw, vjp: {of: out, wrt: w, upstream: dout}}
"""
)

POOL = (
    HEADER.format(id="pool_demo")
    + """
    args: [x, dout]
    sizes: {{N: 1, C: 2, HO: {{min: 2, max: 4}}, WO: {{min: 2, max: 4}}, H: HO + 1, W: WO + 1}}
    inputs:
      x: {{shape: [N, C, H, W], dist: normal}}
      dout: {{shape: [N, C, HO, WO], dist: normal}}
    graph: |
      out = max_pool2d(x, 2{stride})
    returns:
      - {{name: out, value: out}}
      - {{name: dx, vjp: {{of: out, wrt: x, upstream: dout}}}}
"""
)

CONV = (
    HEADER.format(id="conv_demo")
    + """
    args: [x, w, b, dout]
    sizes:
      N: 2
      C: 2
      F: {min: 2, max: 3}
      K: 2
      S: {min: 1, max: 2}
      P: {min: 0, max: 1}
      HO: 3
      H: (HO - 1) * S + K - 2 * P
    inputs:
      x: {shape: [N, C, H, H], dist: normal}
      w: {shape: [F, C, K, K], dist: normal}
      b: {shape: [F], dist: normal}
      dout: {shape: [N, F, HO, HO], dist: normal}
    graph: |
      out = conv2d(x, w, b, S, P)
    returns:
      - {name: out, value: out}
      - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
      - {name: dw, vjp: {of: out, wrt: w, upstream: dout}}
"""
)

RNN_STEP = (
    HEADER.format(id="rnn_step_demo")
    + """
    args: [x, prev_h, Wx, Wh, b, dnext_h]
    sizes: {N: {min: 2, max: 4}, D: {min: 2, max: 4}, H: {min: 2, max: 4}}
    inputs:
      x: {shape: [N, D], dist: uniform, low: -1, high: 1}
      prev_h: {shape: [N, H], dist: uniform, low: -1, high: 1}
      Wx: {shape: [D, H], dist: uniform, low: -0.4, high: 0.4}
      Wh: {shape: [H, H], dist: uniform, low: -0.4, high: 0.4}
      b: {shape: [H], dist: uniform, low: -1, high: 1}
      dnext_h: {shape: [N, H], dist: normal}
    graph: |
      a = x @ Wx + prev_h @ Wh + b
      next_h = tanh(a)
    returns:
      - {name: next_h, value: next_h}
      - {name: dWx, vjp: {of: next_h, wrt: Wx, upstream: dnext_h}}
"""
)


def _exercise(tmp_path: Path, spec: str) -> Exercise:
    return load_exercise(write_exercise(tmp_path / "demo", spec))


def _slip(exercise: Exercise, family: MistakeFamily, start: str = "") -> GraphSlip:
    found = [s for s in backward_slips(exercise) if s.family is family and s.name.startswith(start)]
    assert len(found) == 1, [s.name for s in backward_slips(exercise)]
    return found[0]


Values = Mapping[str, Any]


def _both(exercise: Exercise, slip: GraphSlip, count: int = 12) -> list[tuple[Values, Values, Values]]:
    """(inputs and sizes, right values, the slip's values) on each trial."""
    trials = make_trials(exercise, 0, count)
    right, wrong = reference_returns(exercise, trials), reference_returns(slip.variant, trials)
    return [({**t.inputs, **t.sizes}, right[t.index], wrong[t.index]) for t in trials]


def test_reshape_where_the_transpose_belongs_changes_only_dw(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path, AFFINE)
    slip = _slip(exercise, MistakeFamily.RESHAPE_FOR_TRANSPOSE, "x.reshape")
    assert "x.T" in slip.name and "x @ w" in slip.name
    for values, right, wrong in _both(exercise, slip):
        x, dout = values["x"], values["dout"]
        assert np.allclose(wrong["dw"], x.reshape(x.shape[1], x.shape[0]) @ dout)
        assert np.array_equal(wrong["out"], right["out"]) and np.allclose(wrong["dx"], right["dx"])
    w_slip = _slip(exercise, MistakeFamily.RESHAPE_FOR_TRANSPOSE, "w.reshape")
    for values, _, wrong in _both(exercise, w_slip):
        w, dout = values["w"], values["dout"]
        assert np.allclose(wrong["dx"], dout @ w.reshape(w.shape[1], w.shape[0]))


def _pooled_by_hand(x: np.ndarray, dout: np.ndarray, whole: bool) -> np.ndarray:
    """A student's max-pool backward (2x2 windows, stride 1) that assigns where it must add."""
    dx = np.zeros_like(x)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for i in range(dout.shape[2]):
                for j in range(dout.shape[3]):
                    window = x[n, c, i : i + 2, j : j + 2]
                    if whole:
                        dx[n, c, i : i + 2, j : j + 2] = (window == window.max()) * dout[n, c, i, j]
                    else:
                        k, m = np.unravel_index(np.argmax(window), window.shape)
                        dx[n, c, i + k, j + m] = dout[n, c, i, j]
    return dx


@pytest.mark.parametrize("whole", [False, True], ids=["at-the-maximum", "whole-window"])
def test_overlapping_pooling_windows_assigned(tmp_path: Path, whole: bool) -> None:
    exercise = _exercise(tmp_path, POOL.format(stride=", 1"))
    start = "overlapping pooling windows assigned: each window" + (" of dx" if whole else "'s dout")
    slip = _slip(exercise, MistakeFamily.OVERWRITTEN, start)
    changed = 0
    for values, right, wrong in _both(exercise, slip):
        assert np.allclose(wrong["dx"], _pooled_by_hand(values["x"], values["dout"], whole))
        assert np.array_equal(wrong["out"], right["out"])
        changed += not np.allclose(wrong["dx"], right["dx"])
    assert changed  # overlapping windows do share maxima


def test_windows_that_never_overlap_give_no_overwritten_slip(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path, POOL.format(stride=""))  # the stride is the window's: a tiling
    assert not [s for s in backward_slips(exercise) if s.family is MistakeFamily.OVERWRITTEN]


def _conv_dx_assigned(x: np.ndarray, w: np.ndarray, dout: np.ndarray, s: int, p: int) -> np.ndarray:
    """The loops of conv_naive/wrong/dx_assigned.py: n, f, i, j, each window assigned."""
    x_pad = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    dx_pad = np.zeros_like(x_pad)
    k = w.shape[2]
    for n in range(x.shape[0]):
        for f in range(w.shape[0]):
            for i in range(dout.shape[2]):
                for j in range(dout.shape[3]):
                    dx_pad[n, :, i * s : i * s + k, j * s : j * s + k] = w[f] * dout[n, f, i, j]
    return dx_pad[:, :, p : p + x.shape[2], p : p + x.shape[3]]


def _conv_dx_windows_assigned(x: np.ndarray, w: np.ndarray, dout: np.ndarray, s: int, p: int) -> np.ndarray:
    """The loop over windows only, every filter's share summed in each, each window assigned."""
    x_pad = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    dx_pad = np.zeros_like(x_pad)
    f, c, k, _ = w.shape
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            share = (dout[:, :, i, j] @ w.reshape(f, -1)).reshape(x.shape[0], c, k, k)
            dx_pad[:, :, i * s : i * s + k, j * s : j * s + k] = share
    return dx_pad[:, :, p : p + x.shape[2], p : p + x.shape[3]]


def test_convolution_windows_assigned_in_dx_in_both_loop_orders(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path, CONV)
    forms = [s for s in backward_slips(exercise) if s.family is MistakeFamily.OVERWRITTEN]
    assert len(forms) == 2 and forms[0].name == forms[1].name  # one mistake, named alike
    for slip, loops in zip(forms, (_conv_dx_assigned, _conv_dx_windows_assigned), strict=True):
        for values, right, wrong in _both(exercise, slip):
            by_hand = loops(values["x"], values["w"], values["dout"], values["S"], values["P"])
            assert np.allclose(wrong["dx"], by_hand)
            assert np.allclose(wrong["dw"], right["dw"]) and np.array_equal(wrong["out"], right["out"])


def test_convolution_windows_assigned_differ_from_the_right_dx(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path, CONV)
    slip = next(s for s in backward_slips(exercise) if s.family is MistakeFamily.OVERWRITTEN)
    assert any(not np.allclose(wrong["dx"], right["dx"]) for _, right, wrong in _both(exercise, slip))


def test_tanh_derivative_at_the_previous_state(tmp_path: Path) -> None:
    exercise = _exercise(tmp_path, RNN_STEP)
    slip = _slip(exercise, MistakeFamily.TIME_SHIFT)
    assert "prev_h" in slip.name and "next_h" in slip.name
    for values, right, wrong in _both(exercise, slip):
        da = values["dnext_h"] * (1 - values["prev_h"] ** 2)
        assert np.allclose(wrong["dWx"], values["x"].T @ da)
        assert np.array_equal(wrong["next_h"], right["next_h"])


@pytest.fixture(scope="module")
def lstm_step() -> Exercise:
    return load_exercise(exercise_folder("cs231n.a3.lstm_step"))


def test_gate_orders_are_the_plausible_few(lstm_step: Exercise) -> None:
    orders = [s.name for s in backward_slips(lstm_step) if s.family is MistakeFamily.GATE_ORDER]
    whole = [name for name in orders if name.startswith("the gates in the order")]
    stacked = [name for name in orders if name.startswith("the gates' gradients stacked in the order")]
    # six swaps of two gates and the tanh block moved to the front or second: not the 23 permutations,
    # each read so in the forward and backward, or stacked so in the backward only
    assert len(whole) == len(set(whole)) == len(stacked) == len(set(stacked)) == 8
    assert len(orders) == 16
    assert any(name.startswith("the gates in the order gi, gf, gg, go") for name in whole)  # PyTorch's
    assert any(name.startswith("the gates in the order gi, gg, gf, go") for name in whole)  # TensorFlow's


def test_gate_gradients_stacked_in_another_order(lstm_step: Exercise) -> None:
    order = "gi, gf, gg, go"
    stacked = _slip(lstm_step, MistakeFamily.GATE_ORDER, f"the gates' gradients stacked in the order {order}")
    whole = _slip(lstm_step, MistakeFamily.GATE_ORDER, f"the gates in the order {order}")
    pairs = zip(_both(lstm_step, stacked, 6), _both(lstm_step, whole, 6), strict=True)
    for (_, right, wrong), (_, _, both) in pairs:
        for name in ("next_h", "next_c", "dprev_c"):  # the forward, and the cell's path, are right
            assert np.array_equal(wrong[name], right[name])
        assert not np.allclose(wrong["db"], right["db"]) and not np.allclose(wrong["db"], both["db"])


def test_gates_read_in_another_order(lstm_step: Exercise) -> None:
    slip = _slip(lstm_step, MistakeFamily.GATE_ORDER, "the gates in the order gi, gf, gg, go")
    for values, _, wrong in _both(lstm_step, slip, 6):
        a = values["x"] @ values["Wx"] + values["prev_h"] @ values["Wh"] + values["b"]
        h = values["H"]
        i, f, g, o = (a[:, k * h : (k + 1) * h] for k in range(4))  # the student's i, f, g, o
        sig = 1 / (1 + np.exp(-np.stack([i, f, o])))
        next_c = sig[1] * values["prev_c"] + sig[0] * np.tanh(g)
        assert np.allclose(wrong["next_c"], next_c)
        assert np.allclose(wrong["next_h"], sig[2] * np.tanh(next_c))


def test_forget_gate_missing_from_dprev_c(lstm_step: Exercise) -> None:
    slip = _slip(lstm_step, MistakeFamily.DERIVATIVE_MISSING, "the factor gf missing from dprev_c")
    for values, right, wrong in _both(lstm_step, slip, 6):
        a = values["x"] @ values["Wx"] + values["prev_h"] @ values["Wh"] + values["b"]
        h = values["H"]
        forget = 1 / (1 + np.exp(-a[:, h : 2 * h]))
        assert np.allclose(wrong["dprev_c"] * forget, right["dprev_c"])  # dc, where dc * f belongs
        for name in ("next_h", "next_c", "dx", "dWx", "db"):
            assert np.allclose(wrong[name], right[name])


def test_an_exercise_without_a_graph_has_no_slips() -> None:
    rnn = load_exercise(exercise_folder("cs231n.a3.rnn"))  # a reference function, with a loop
    assert list(backward_slips(rnn)) == []


@functools.cache
def _graded_against(exercise_id: str) -> tuple[Exercise, Settings, SharedReferences]:
    """An exercise, its settings (seed 0, 120 trials) and their references, found once, as a class run
    shares them (grade() finds them so itself): the candidates diagnose keeps per set of references are
    computed once for the exercise's wrong files, not once per file (three of lstm_step's). The settings
    are made at the first test's call: their cache is the session's (conftest's reference_cache)."""
    exercise = load_exercise(exercise_folder(exercise_id))
    settings = Settings(0, 120)
    return exercise, settings, find_references(exercise, settings)


@pytest.mark.parametrize(
    ("exercise_id", "wrong", "returns", "start", "family"),
    [
        (
            "cs231n.a3.lstm_step",
            "gates_ifgo.py",
            ("next_c", "dWx"),
            "the gates in the order gi, gf, gg, go",
            MistakeFamily.GATE_ORDER,
        ),
        (
            "cs231n.a3.lstm_step",
            "da_ifgo.py",
            ("dx", "db"),
            "the gates' gradients stacked in the order gi, gf, gg, go",
            MistakeFamily.GATE_ORDER,
        ),
        (
            "cs231n.a3.lstm_step",
            "dprev_c_no_forget.py",
            ("dprev_c",),
            "the factor gf missing from dprev_c",
            MistakeFamily.DERIVATIVE_MISSING,
        ),
        (
            "cs231n.a3.rnn_step",
            "tanh_prime_prev_h.py",
            ("dx", "dWh"),
            "tanh's derivative taken at prev_h",
            MistakeFamily.TIME_SHIFT,
        ),
        (
            "cs231n.a3.temporal_affine",
            "dw_reshape.py",
            ("dw",),
            "x.reshape where x.T belongs",
            MistakeFamily.RESHAPE_FOR_TRANSPOSE,
        ),
        (
            "cs231n.a2.conv_naive",
            "dx_assigned.py",
            ("dx",),
            "convolution windows assigned in dx",
            MistakeFamily.OVERWRITTEN,
        ),
        (
            "cs231n.a2.max_pool_naive",
            "assign_not_accumulate.py",
            ("dx",),
            "overlapping pooling windows assigned: each window's dout",
            MistakeFamily.OVERWRITTEN,
        ),
    ],
    ids=[
        "gate-order",
        "gate-gradients",
        "forget-gate",
        "time-shift",
        "reshape",
        "conv-assigned",
        "pool-assigned",
    ],
)
def test_real_style_code_is_named(
    exercise_id: str, wrong: str, returns: tuple[str, ...], start: str, family: MistakeFamily
) -> None:
    exercise, settings, references = _graded_against(exercise_id)
    path = exercise.root / "wrong" / wrong
    result = grade(exercise, submission_from_path(path, exercise.spec.entry), settings, references)
    by_name = {r.name: r for r in result.returns}
    for name in returns:
        got = by_name[name]
        assert got.verdict is Verdict.LOGIC
        assert got.misconception is not None and got.misconception.startswith(start), got.misconception
        assert got.mistake_family is family


@functools.cache
def _exercise_and_references(exercise_id: str) -> tuple[Exercise, References]:
    """One set of references per exercise for both dtypes: diagnose keeps its candidates per set, which
    for lstm_step's 38 graphs are most of the test's time."""
    exercise = load_exercise(exercise_folder(exercise_id))
    return exercise, compute_references(exercise, make_trials(exercise, 0, 40))


@pytest.mark.parametrize(
    "exercise_id",
    [
        "cs231n.a3.lstm_step",
        "cs231n.a3.rnn_step",
        "cs231n.a2.conv_naive",
        "cs231n.a2.max_pool_naive",
        "cs231n.a3.temporal_affine",
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_right_values_are_never_named(exercise_id: str, dtype: str) -> None:
    """The right values, as float64 or float32 code returns them, match no candidate that differs from
    them: diagnose names nothing, whichever return it is asked about."""
    exercise, references = _exercise_and_references(exercise_id)
    for spec in exercise.spec.returns:
        returned = {
            t.index: Returned(
                ReturnedArray(name=spec.name, ok=True, dtype=dtype, source="numpy"),
                references.expected[t.index][spec.name].astype(dtype),
            )
            for t in references.trials
        }
        trials = sorted(returned)
        compared = compare_many(
            spec,
            trials,
            [references.expected[i][spec.name] for i in trials],
            [returned[i].array for i in trials],
            [dtype] * len(trials),
            [references.spread[i][spec.name] for i in trials],
        )
        found = diagnose(exercise, references, spec, returned, {c.trial: c for c in compared})
        assert found is None, (spec.name, found)


def test_the_internal_operations_are_not_offered_to_authors() -> None:
    with pytest.raises(GraphError, match="not an allowed function"):
        parse("out = slip_matmul_reshaped(x, w, 0)", ["x", "w"])


def test_the_upstream_gradient_reshaped_where_its_transpose_belongs(tmp_path: Path) -> None:
    """cs231n's affine dx from (w @ dout.reshape(M, N)).reshape(x.shape), where dout @ w.T belongs."""
    exercise = _exercise(tmp_path, AFFINE)
    slip = _slip(exercise, MistakeFamily.RESHAPE_FOR_TRANSPOSE, "the upstream gradient")
    for values, right, wrong in _both(exercise, slip):
        x, w, dout = values["x"], values["w"], values["dout"]
        by_hand = (w @ dout.reshape(dout.shape[1], dout.shape[0])).reshape(x.shape)
        assert np.allclose(wrong["dx"], by_hand)
        assert np.array_equal(wrong["out"], right["out"]) and np.allclose(wrong["dw"], right["dw"])


def test_repeated_indices_assigned_keep_the_last_occurrence() -> None:
    """dW[x] = dout, or numpy's buffered dW[x] += dout: where an index repeats, only its last write."""
    exercise = load_exercise(exercise_folder("cs231n.a3.word_embedding"))
    slip = _slip(exercise, MistakeFamily.OVERWRITTEN)
    repeated = False
    for values, right, wrong in _both(exercise, slip, count=24):
        x, dout = values["x"], values["dout"]
        by_hand = np.zeros_like(values["W"])
        by_hand[x] += dout  # numpy's buffered fancy-index +=: the last occurrence wins
        assert np.allclose(wrong["dW"], by_hand)
        assert np.array_equal(wrong["out"], right["out"])
        repeated |= len(np.unique(x)) < x.size
    assert repeated  # the trials drew repeated indices, where the slip differs from the right dW
