"""The graph language's layer functions (convolution, pooling, einsum, index picking, layer norm) against
naive numpy loops written from their definitions, forward and backward, alone and through the reference's
vmap and Monte Carlo rounding."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import write_exercise
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from grader.exercise import reference
from grader.exercise.graph import GraphError, evaluate, parse
from grader.exercise.reference import compute_references
from grader.exercise.spec import Exercise, ReturnSpec, load_exercise
from grader.exercise.trials import make_trials
from grader.judging.compare import compare
from grader.outcomes import Verdict

Pair = tuple[int, int]


def pair(value: int | Pair) -> Pair:
    return (value, value) if isinstance(value, int) else value


# --- naive numpy references, written from the definitions (CS231n's conv_forward_naive and friends) ---


def conv2d_naive(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int | Pair, padding: int | Pair
) -> np.ndarray:
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    n, _, h, wd = x.shape
    f, _, hh, ww = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, f, (h + 2 * ph - hh) // sh + 1, (wd + 2 * pw - ww) // sw + 1), dtype=x.dtype)
    for i, k, r, c in itertools.product(*map(range, out.shape)):
        window = xp[i, :, r * sh : r * sh + hh, c * sw : c * sw + ww]
        out[i, k, r, c] = np.sum(window * w[k]) + (0 if b is None else b[k])
    return out


def conv2d_naive_backward(
    dout: np.ndarray, x: np.ndarray, w: np.ndarray, stride: int | Pair, padding: int | Pair
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    _, _, h, wd = x.shape
    _, _, hh, ww = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i, k, r, c in itertools.product(*map(range, dout.shape)):
        rows, cols = slice(r * sh, r * sh + hh), slice(c * sw, c * sw + ww)
        dxp[i, :, rows, cols] += w[k] * dout[i, k, r, c]
        dw[k] += xp[i, :, rows, cols] * dout[i, k, r, c]
    return dxp[:, :, ph : ph + h, pw : pw + wd], dw, dout.sum(axis=(0, 2, 3))


def pool2d_naive(x: np.ndarray, kernel: int | Pair, stride: int | Pair, kind: str) -> np.ndarray:
    (kh, kw), (sh, sw) = pair(kernel), pair(stride)
    n, c, h, w = x.shape
    out = np.zeros((n, c, (h - kh) // sh + 1, (w - kw) // sw + 1), dtype=x.dtype)
    for i, k, r, col in itertools.product(*map(range, out.shape)):
        window = x[i, k, r * sh : r * sh + kh, col * sw : col * sw + kw]
        out[i, k, r, col] = window.max() if kind == "max" else window.mean()
    return out


def pool2d_naive_backward(
    dout: np.ndarray, x: np.ndarray, kernel: int | Pair, stride: int | Pair, kind: str
) -> np.ndarray:
    (kh, kw), (sh, sw) = pair(kernel), pair(stride)
    dx = np.zeros_like(x)
    for i, k, r, col in itertools.product(*map(range, dout.shape)):
        window = x[i, k, r * sh : r * sh + kh, col * sw : col * sw + kw]
        if kind == "max":
            a, bb = np.unravel_index(np.argmax(window), window.shape)
            dx[i, k, r * sh + a, col * sw + bb] += dout[i, k, r, col]
        else:
            dx[i, k, r * sh : r * sh + kh, col * sw : col * sw + kw] += dout[i, k, r, col] / (kh * kw)
    return dx


def layer_norm_naive(x: np.ndarray, dims: int, eps: float) -> np.ndarray:
    axes = tuple(range(x.ndim - dims, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    return np.asarray((x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps))


def layer_norm_naive_backward(g: np.ndarray, x: np.ndarray, dims: int, eps: float) -> np.ndarray:
    # d/dx of sum(g * xhat): (g - mean(g) - xhat * mean(g * xhat)) / sqrt(var + eps), over the normalised axes
    axes = tuple(range(x.ndim - dims, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    xhat = (x - mu) * inv_std
    return np.asarray(
        inv_std * (g - g.mean(axis=axes, keepdims=True) - xhat * (g * xhat).mean(axis=axes, keepdims=True))
    )


# --- the graph, evaluated with autograd ---


def graph_vjp(
    source: str, inputs: Mapping[str, np.ndarray | int | float], upstream: np.ndarray, wrt: list[str]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The graph's last value and the gradients of sum(upstream * value) with respect to `wrt`."""
    env: dict[str, Any] = {}
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            tensor = torch.from_numpy(value)
            env[name] = tensor.requires_grad_(name in wrt) if tensor.is_floating_point() else tensor
        else:
            env[name] = value
    program = parse(source, list(env))
    out = evaluate(program, env)[program.defined[-1]]
    assert out.dtype == torch.float64
    grads = torch.autograd.grad((out * torch.from_numpy(upstream)).sum(), [env[n] for n in wrt])
    return out.detach().numpy(), [g.numpy() for g in grads]


def close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


rng = np.random.default_rng(2026)


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape)


# --- forward and backward against the naive loops ---


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "padding", "bias"),
    [
        ((2, 3, 5, 5), (4, 3, 3, 3), 1, 0, True),
        ((2, 3, 7, 6), (4, 3, 3, 3), 2, 1, True),  # CS231n's conv_forward_naive test: stride 2, pad 1
        ((1, 2, 8, 5), (3, 2, 3, 2), (2, 1), (1, 0), True),
        ((3, 1, 4, 4), (2, 1, 4, 4), 1, 2, False),
        ((1, 1, 6, 6), (1, 1, 1, 1), 3, 0, True),
    ],
)
def test_conv2d_matches_the_naive_loops(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: int | Pair, padding: int | Pair, bias: bool
) -> None:
    x, w, b = normal(*x_shape), normal(*w_shape), normal(w_shape[0])
    expected = conv2d_naive(x, w, b if bias else None, stride, padding)
    dout = normal(*expected.shape)
    source = f"out = conv2d(x, w{', b' if bias else ''}, stride={stride}, padding={padding})"
    out, grads = graph_vjp(source, {"x": x, "w": w, "b": b}, dout, ["x", "w"] + ["b"] * bias)
    close(out, expected)
    for got, hand in zip(grads, conv2d_naive_backward(dout, x, w, stride, padding), strict=False):
        close(got, hand)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "padding"),
    [((2, 3, 9), (4, 3, 3), 1, 0), ((1, 2, 10), (3, 2, 4), 3, 2), ((2, 1, 5), (1, 1, 5), 2, 1)],
)
def test_conv1d_matches_the_naive_loops(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: int, padding: int
) -> None:
    check_conv1d(normal(*x_shape), normal(*w_shape), normal(w_shape[0]), stride, padding)


def check_conv1d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, padding: int) -> None:
    # the 2-D loops over a height of one
    expected = conv2d_naive(x[:, :, None], w[:, :, None], b, (1, stride), (0, padding))[:, :, 0]
    dout = normal(*expected.shape)
    source = f"out = conv1d(x, w, b, {stride}, {padding})"
    out, (dx, dw, db) = graph_vjp(source, {"x": x, "w": w, "b": b}, dout, ["x", "w", "b"])
    close(out, expected)
    hand = conv2d_naive_backward(dout[:, :, None], x[:, :, None], w[:, :, None], (1, stride), (0, padding))
    close(dx, hand[0][:, :, 0])
    close(dw, hand[1][:, :, 0])
    close(db, hand[2])


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 3),
    c=st.integers(1, 3),
    f=st.integers(1, 3),
    k=st.integers(1, 5),
    extra=st.integers(0, 6),
    stride=st.integers(1, 4),
    padding=st.integers(0, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_conv1d_over_random_sizes(
    n: int, c: int, f: int, k: int, extra: int, stride: int, padding: int, seed: int
) -> None:
    draw = np.random.default_rng(seed)
    length = max(1, k + extra - 2 * padding)  # at least one output position
    x, w, b = draw.normal(size=(n, c, length)), draw.normal(size=(f, c, k)), draw.normal(size=f)
    check_conv1d(x, w, b, stride, padding)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(
    ("x_shape", "kernel", "stride"),
    [
        ((2, 3, 4, 4), 2, None),
        ((1, 2, 7, 5), 3, 2),
        ((2, 1, 6, 5), (2, 3), (1, 2)),
        ((1, 2, 5, 5), 2, 1),  # overlapping windows: an entry that is the max of several adds their gradients
    ],
)
def test_pool2d_matches_the_naive_loops(
    kind: str, x_shape: tuple[int, ...], kernel: int | Pair, stride: int | Pair | None
) -> None:
    x = normal(*x_shape)
    expected = pool2d_naive(x, kernel, kernel if stride is None else stride, kind)
    dout = normal(*expected.shape)
    call = f"{kind}_pool2d(x, {kernel})" if stride is None else f"{kind}_pool2d(x, {kernel}, stride={stride})"
    out, (dx,) = graph_vjp(f"out = {call}", {"x": x}, dout, ["x"])
    close(out, expected)
    close(dx, pool2d_naive_backward(dout, x, kernel, kernel if stride is None else stride, kind))


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(("x_shape", "kernel", "stride"), [((2, 3, 8), 2, None), ((1, 2, 9), 3, 1)])
def test_pool1d_matches_the_naive_loops(
    kind: str, x_shape: tuple[int, ...], kernel: int, stride: int | None
) -> None:
    x = normal(*x_shape)
    step = kernel if stride is None else stride
    expected = pool2d_naive(x[:, :, None], (1, kernel), (1, step), kind)[:, :, 0]
    dout = normal(*expected.shape)
    call = f"{kind}_pool1d(x, {kernel})" if stride is None else f"{kind}_pool1d(x, {kernel}, {stride})"
    out, (dx,) = graph_vjp(f"out = {call}", {"x": x}, dout, ["x"])
    close(out, expected)
    hand = pool2d_naive_backward(dout[:, :, None], x[:, :, None], (1, kernel), (1, step), kind)
    close(dx, hand[:, :, 0])


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 2)]),
        ("nij,njk->nik", [(2, 3, 4), (2, 4, 5)]),
        ("ij,jk,k->i", [(3, 4), (4, 5), (5,)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ii->", [(4, 4)]),
        ("bij->bji", [(2, 3, 4)]),
        ("...ij,...j->...i", [(2, 3, 4), (2, 4)]),
        ("ntd, d -> nt", [(2, 3, 4), (4,)]),
    ],
)
def test_einsum_matches_numpy(equation: str, shapes: list[tuple[int, ...]]) -> None:
    operands = [normal(*shape) for shape in shapes]
    names = [f"a{i}" for i in range(len(operands))]
    expected = np.einsum(equation.replace(" ", ""), *operands)
    g = normal(*expected.shape)
    source = f"out = einsum('{equation}', {', '.join(names)})"
    out, grads = graph_vjp(source, dict(zip(names, operands, strict=True)), g, names)
    close(out, expected)

    # sum(g * einsum(...)) is linear in each operand: central differences of step 1 are exact
    def objective(ops: list[np.ndarray]) -> float:
        return float(np.sum(g * np.einsum(equation.replace(" ", ""), *ops)))

    for which, grad in enumerate(grads):
        numeric = np.zeros_like(operands[which])
        for index in np.ndindex(*numeric.shape):
            up = [o.copy() for o in operands]
            down = [o.copy() for o in operands]
            up[which][index] += 1
            down[which][index] -= 1
            numeric[index] = (objective(up) - objective(down)) / 2
        close(grad, numeric)


def test_gather_index_select_and_embedding_match_numpy() -> None:
    x = normal(4, 5)
    index = rng.integers(0, 5, size=(4, 3))  # int64, as an input with dist: integer arrives
    g = normal(4, 3)
    out, (dx,) = graph_vjp("out = gather(x, 1, idx)", {"x": x, "idx": index}, g, ["x"])
    close(out, np.take_along_axis(x, index, axis=1))
    hand = np.zeros_like(x)
    for r, c in np.ndindex(*index.shape):
        hand[r, index[r, c]] += g[r, c]
    close(dx, hand)

    rows = np.array([3, 0, 3, 1, 3])  # repeated: their gradients add up
    g = normal(5, 5)
    out, (dx,) = graph_vjp("out = index_select(x, 0, idx)", {"x": x, "idx": rows}, g, ["x"])
    close(out, x[rows])
    hand = np.zeros_like(x)
    np.add.at(hand, rows, g)
    close(dx, hand)
    g = normal(4, 3)
    out, (dx,) = graph_vjp("out = index_select(x, -1, (4, 0, 4))", {"x": x}, g, ["x"])
    close(out, x[:, [4, 0, 4]])
    close(dx, np.stack([g[:, 1], np.zeros(4), np.zeros(4), np.zeros(4), g[:, 0] + g[:, 2]], axis=1))

    weight = normal(6, 3)
    tokens = rng.integers(0, 6, size=(2, 4, 3))  # any shape, with repeats
    g = normal(2, 4, 3, 3)
    out, (dw,) = graph_vjp(
        "out = embedding(tokens, weight)", {"tokens": tokens, "weight": weight}, g, ["weight"]
    )
    close(out, weight[tokens])
    hand = np.zeros_like(weight)
    np.add.at(hand, tokens, g)
    close(dw, hand)


@pytest.mark.parametrize(
    ("shape", "dims", "eps", "mean"),
    [((4, 5), 1, 1e-5, 0.0), ((2, 3, 4), 2, 1e-5, 3.0), ((3, 4), 2, 1e-3, -2.0), ((2, 6), 1, 0.5, 100.0)],
)
def test_layer_norm_matches_its_formula(shape: tuple[int, ...], dims: int, eps: float, mean: float) -> None:
    x = mean + normal(*shape)
    g = normal(*shape)
    call = f"layer_norm(x, {dims}, eps={eps})" if eps != 1e-5 else f"layer_norm(x, dims={dims})"
    out, (dx,) = graph_vjp(f"out = {call}", {"x": x}, g, ["x"])
    close(out, layer_norm_naive(x, dims, eps))
    close(dx, layer_norm_naive_backward(g, x, dims, eps))


def test_layer_norm_with_an_affine_written_in_the_graph() -> None:
    x, gamma, beta, g = normal(5, 4), normal(4), normal(4), normal(5, 4)
    source = "out = gamma * layer_norm(x) + beta"
    out, (dx, dgamma, dbeta) = graph_vjp(
        source, {"x": x, "gamma": gamma, "beta": beta}, g, ["x", "gamma", "beta"]
    )
    close(out, gamma * layer_norm_naive(x, 1, 1e-5) + beta)
    close(dx, layer_norm_naive_backward(g * gamma, x, 1, 1e-5))
    close(dgamma, (g * layer_norm_naive(x, 1, 1e-5)).sum(axis=0))
    close(dbeta, g.sum(axis=0))


# --- errors an exercise author sees ---


def rejected(source: str, known: tuple[str, ...] = ("x", "y", "W", "idx")) -> str:
    with pytest.raises(GraphError) as info:
        parse(source, known)
    return info.value.message


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("z = einsum(x, y)", "einsum()'s first argument must be its equation as a string constant, not `x`"),
        ("z = einsum(1, x)", "as a string constant, not `1`: such as einsum('ij,jk->ik', a, b)"),
        ("z = einsum('ij;jk->ik', x, y)", "';' not allowed"),
        ("z = einsum('ij,jk->i-k', x, y)", "at most one '->'"),
        ("z = einsum('ij->j->i', x)", "at most one '->'"),
        ("z = einsum('i..j', x)", "a '.' must be part of an ellipsis"),
        ("z = einsum('ij,jk->ik', x)", "names 2 operands, but 1 is given"),
        ("z = einsum('ij->ji', x, y)", "names 1 operand, but 2 are given"),
        ("z = einsum('ij')", "einsum() takes at least 2 arguments, not 1"),
        ("z = einsum('ij->ji', 'x')", "(a string only as einsum's equation), not 'x'"),
        ("z = exp('x')", "only numeric constants and True/False are allowed (a string only as einsum's"),
        ("z = conv2d(x)", "conv2d() takes 2-5 arguments, not 1: conv2d(x, w, b=None, stride=1, padding=0)"),
        ("z = conv2d(x, W, y, 1, 0, 2)", "conv2d() takes 2-5 arguments, not 6"),
        ("z = conv2d(x, W, bias=y)", "conv2d() takes no keyword 'bias'; it takes b, padding, stride"),
        ("z = conv1d(x, W, dilation=2)", "conv1d() takes no keyword 'dilation'"),
        ("z = max_pool2d(x)", "max_pool2d() takes 2-3 arguments, not 1: max_pool2d(x, kernel, stride=None)"),
        ("z = avg_pool1d(x, 2, padding=1)", "avg_pool1d() takes no keyword 'padding'; it takes stride"),
        ("z = gather(x, idx)", "gather() takes 3 arguments, not 2: gather(x, dim, index)"),
        ("z = embedding(idx)", "embedding() takes 2 arguments, not 1: embedding(index, weight)"),
        ("z = layer_norm(x, axis=1)", "layer_norm() takes no keyword 'axis'; it takes dims, eps"),
        ("embedding = x", "'embedding' is a function of the language"),
    ],
)
def test_wrong_calls_are_explained(source: str, words: str) -> None:
    assert words in rejected(source)


@pytest.mark.parametrize(
    ("source", "env", "words"),
    [
        (
            "z = layer_norm(x, 3)",
            {"x": torch.ones(2, 3, dtype=torch.float64)},
            "dims counts the last axes to normalise over, from 1",
        ),
        (
            "z = gather(x, 0, x)",
            {"x": torch.ones(2, 3, dtype=torch.float64)},
            "gather()'s index is a float64 tensor, but indices must",
        ),
        ("z = conv2d(x, x)", {"x": torch.ones(2, 3)}, "`z = conv2d(x, x)` fails"),
    ],
)
def test_failing_calls_name_the_line_and_the_problem(source: str, env: dict[str, Any], words: str) -> None:
    with pytest.raises(GraphError) as info:
        evaluate(parse(source, list(env)), env)
    assert words in info.value.message


# --- through the reference: vmap over trials, the loop fallback, the Monte Carlo spread ---

CONV_POOL = """
id: conv_pool
title: A convolution, a ReLU and overlapping max pooling
entry: conv_pool
args: [x, w, b, dout]
sizes:
  N: 2
  C: {min: 1, max: 2}
  F: {min: 1, max: 2}
  H: {min: 3, max: 4}
  W: {min: 3, max: 4}
  Hp: (H - 1) // 2
  Wp: W - 2
inputs:
  x: {shape: [N, C, H, W], dist: normal}
  w: {shape: [F, C, 3, 2], dist: normal}
  b: {shape: [F], dist: normal}
  dout: {shape: [N, F, Hp, Wp], dist: normal}
graph: |
  y = conv2d(x, w, b, stride=(2, 1), padding=(1, 0))
  out = max_pool2d(relu(y), 2, stride=1)
returns:
  - {name: y, value: y}
  - {name: out, value: out}
  - {name: dx, vjp: {of: out, wrt: x, upstream: dout}}
  - {name: dw, vjp: {of: out, wrt: w, upstream: dout}}
  - {name: db, vjp: {of: out, wrt: b, upstream: dout}}
trials: 24
solution: null
starter: null
"""

TOKENS = """
id: tokens
title: Embedded tokens, normalised, scored and picked
entry: tokens
args: [tokens, weight, v, picks, cols]
sizes:
  N: {min: 1, max: 2}
  T: {min: 2, max: 3}
  V: 4
  D: {min: 2, max: 3}
inputs:
  tokens: {shape: [N, T], dist: integer, low: 0, high: V - 1}
  weight: {shape: [V, D], dist: normal, mean: 2}
  v: {shape: [D], dist: normal}
  picks: {shape: [3], dist: integer, low: 0, high: T - 1}
  cols: {shape: [N, 2], dist: integer, low: 0, high: T - 1}
graph: |
  h = layer_norm(embedding(tokens, weight))
  s = einsum('ntd,d->nt', h, v)
  loss = sum(index_select(s, 1, picks) ** 2) + sum(gather(s, 1, cols))
returns:
  - {name: loss, value: loss}
  - {name: dweight, grad: {of: loss, wrt: weight}}
  - {name: dv, grad: {of: loss, wrt: v}}
trials: 24
solution: null
starter: null
"""


@pytest.fixture(scope="module")
def conv_pool(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("ops") / "conv_pool", CONV_POOL))


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("ops") / "tokens", TOKENS))


@pytest.fixture
def vmap_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batched path must carry these graphs: a fallback to the per-trial loop fails the test."""

    def no_loop(*args: object) -> object:
        raise AssertionError("vmap could not batch the graph")

    monkeypatch.setattr(reference, "_loop", no_loop)


@pytest.fixture
def loop_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if vmap had no batching rule for some operation: every group runs trial by trial."""

    def no_vmap(*args: object, **kwargs: object) -> Callable[..., object]:
        def fails(*a: object) -> object:
            raise RuntimeError("no batching rule")

        return fails

    monkeypatch.setattr(torch.func, "vmap", no_vmap)


def conv_pool_naive(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, w, b, dout = (inputs[k] for k in ("x", "w", "b", "dout"))
    y = conv2d_naive(x, w, b, (2, 1), (1, 0))
    relu = np.maximum(y, 0)
    dy = pool2d_naive_backward(dout, relu, 2, 1, "max") * (y > 0)
    dx, dw, db = conv2d_naive_backward(dy, x, w, (2, 1), (1, 0))
    return {"y": y, "out": pool2d_naive(relu, 2, 1, "max"), "dx": dx, "dw": dw, "db": db}


def tokens_naive(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    tok, weight, v, picks, cols = (inputs[k] for k in ("tokens", "weight", "v", "picks", "cols"))
    e = weight[tok]
    h = layer_norm_naive(e, 1, 1e-5)
    s = h @ v
    ds = np.zeros_like(s)
    for p in picks:  # repeated picks add up
        ds[:, p] += 2 * s[:, p]
    for r, c in np.ndindex(*cols.shape):
        ds[r, cols[r, c]] += 1
    dh = ds[..., None] * v
    dweight = np.zeros_like(weight)
    np.add.at(dweight, tok, layer_norm_naive_backward(dh, e, 1, 1e-5))
    loss = np.sum(s[:, picks] ** 2) + np.sum(np.take_along_axis(s, cols, axis=1))
    return {"loss": np.asarray(loss), "dweight": dweight, "dv": (ds[..., None] * h).sum(axis=(0, 1))}


def check_references(
    exercise: Exercise, naive: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]
) -> None:
    trials = make_trials(exercise, 5, exercise.spec.trials)
    assert len({t.size_key for t in trials}) < len(trials)  # some groups batch several trials
    references = compute_references(exercise, trials)
    for trial in trials:
        hand = naive(trial.inputs)
        for name, value in hand.items():
            close(references.expected[trial.index][name], value)
            spread = references.spread[trial.index][name]
            # every entry that depends on the inputs rounds: the Monte Carlo run must see it move
            assert np.all(spread[value != 0] > 0), f"{name}: no rounding spread at trial {trial.index}"


def test_conv_and_pool_references_are_batched_by_vmap(conv_pool: Exercise, vmap_only: None) -> None:
    check_references(conv_pool, conv_pool_naive)


def test_conv_and_pool_references_without_vmap_are_the_same(conv_pool: Exercise, loop_only: None) -> None:
    check_references(conv_pool, conv_pool_naive)


def test_index_and_layer_norm_references_are_batched_by_vmap(tokens: Exercise, vmap_only: None) -> None:
    check_references(tokens, tokens_naive)


def test_index_and_layer_norm_references_without_vmap_are_the_same(tokens: Exercise, loop_only: None) -> None:
    check_references(tokens, tokens_naive)


def test_float32_naive_loops_pass_within_the_envelope(conv_pool: Exercise) -> None:
    """A correct student who loops in float32 (conv_forward_naive, max_pool_backward_naive, ...) passes."""
    trials = make_trials(conv_pool, 11, 12)
    references = compute_references(conv_pool, trials)
    for trial in trials:
        student = conv_pool_naive({k: v.astype(np.float32) for k, v in trial.inputs.items()})
        for name, got in student.items():
            assert got.dtype == np.float32  # the loops keep their inputs' precision
            result = compare(
                trial.index,
                ReturnSpec(name=name, value=name),
                references.expected[trial.index][name],
                got,
                "float32",
                references.spread[trial.index][name],
            )
            assert result.verdict == Verdict.PASS, (name, trial.index, result.max_ratio)


# --- every rounding operation the new functions run is one the Monte Carlo mode perturbs ---

# Operations that only move, copy or pick values (exact at any precision), as logged below.
_EXACT = frozenset(
    "view _unsafe_view permute clone unsqueeze squeeze expand select select_backward stack transpose t "
    "diagonal diagonal_backward gather index_select embedding max_pool2d_with_indices new_zeros ones_like "
    "zeros_like arange index neg detach alias".split()
)


class _Log(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.floating: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        results = result if isinstance(result, tuple | list) else (result,)
        if any(isinstance(r, torch.Tensor) and r.is_floating_point() for r in results):
            self.floating.add(func.overloadpacket.__name__)
        return result


Shapes = dict[str, tuple[int, ...]]
CALLS: dict[str, Shapes] = {
    "conv1d(x1, w1, b, stride=2, padding=1)": {"x1": (2, 3, 7), "w1": (4, 3, 3), "b": (4,)},
    "conv2d(x, w, b, stride=(2, 1), padding=1)": {"x": (2, 3, 6, 5), "w": (4, 3, 3, 2), "b": (4,)},
    "conv2d(x, w)": {"x": (2, 3, 6, 5), "w": (4, 3, 3, 2)},
    "max_pool1d(x1, 3, 2)": {"x1": (2, 3, 7)},
    "max_pool2d(x, 2, stride=1)": {"x": (2, 3, 6, 5)},
    "avg_pool1d(x1, 3, 2)": {"x1": (2, 3, 7)},
    "avg_pool2d(x, (2, 3))": {"x": (2, 3, 6, 5)},
    "einsum('nij,njk->nik', a, c)": {"a": (2, 3, 4), "c": (2, 4, 5)},
    "einsum('ij,j->i', a, c)": {"a": (3, 4), "c": (4,)},
    "einsum('ii->', a)": {"a": (4, 4)},
    "gather(x1, 2, index)": {"x1": (2, 3, 7)},
    "index_select(x1, 2, index[0, 0])": {"x1": (2, 3, 7)},
    "embedding(index, w1)": {"w1": (7, 3)},
    "layer_norm(x, 2, eps=0.1)": {"x": (2, 3, 6, 5)},
}


def logged_operations(call: str, batched: bool) -> set[str]:
    trials = 3
    env: dict[str, Any] = {
        name: torch.randn(trials, *shape, dtype=torch.float64, requires_grad=True)
        for name, shape in CALLS[call].items()
    }
    env["index"] = torch.randint(0, 7, (trials, 2, 3, 4))
    names = list(env)
    program = parse(f"out = {call}", names)

    def forward(*tensors: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(evaluate(program, dict(zip(names, tensors, strict=True)))["out"])

    log = _Log()
    with log:
        tensors = [env[n] for n in names]
        out = (
            torch.func.vmap(forward)(*tensors)
            if batched
            else reference._loop(lambda *t: (forward(*t),), tensors)[0]
        )
        torch.autograd.grad((out * out.detach()).sum(), [t for t in tensors if t.requires_grad])
    return log.floating


@pytest.mark.parametrize("batched", [True, False], ids=["vmap", "loop"])
@pytest.mark.parametrize("call", list(CALLS))
def test_every_rounding_operation_is_perturbed(call: str, batched: bool) -> None:
    unlisted = logged_operations(call, batched) - reference._ROUNDING - _EXACT
    assert not unlisted, f"{call}: rounding operations the Monte Carlo mode leaves exact: {sorted(unlisted)}"


# The gradient of sum(f(...)) starts from ones, exactly: only f's own backward can round it.
MOVED: dict[str, Shapes] = {
    "conv1d(x1, w1, b, stride=2, padding=1)": {"x1": (2, 3, 7), "w1": (4, 3, 3), "b": (4,)},
    "conv2d(x, w, b, stride=(2, 1), padding=1)": {"x": (2, 3, 6, 5), "w": (4, 3, 3, 2), "b": (4,)},
    "max_pool2d(x, 2, stride=1)": {"x": (2, 3, 6, 5)},
    "avg_pool1d(x1, 3, 2)": {"x1": (2, 3, 7)},
    "avg_pool2d(x, (2, 3), stride=1)": {"x": (2, 3, 6, 5)},
    "gather(x1, 2, index)": {"x1": (2, 3, 7)},
    "index_select(x1, 2, index[0, 0, 0])": {"x1": (2, 3, 7)},
    "embedding(index, w1)": {"w1": (7, 3)},
}


def sum_and_gradients(call: str, env: Mapping[str, torch.Tensor], noise: float) -> list[torch.Tensor]:
    program = parse(f"out = sum({call})", list(env))
    floating = [t for t in env.values() if t.is_floating_point()]
    with reference._RoundingNoise(noise) if noise else contextlib.nullcontext():
        out = evaluate(program, env)["out"]
        return [out.detach(), *torch.autograd.grad(out, floating)]


@pytest.mark.parametrize("call", list(MOVED))
def test_the_rounding_mode_moves_each_gradient(call: str) -> None:
    generator = torch.Generator().manual_seed(3)
    env = {
        name: torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_(True)
        for name, shape in MOVED[call].items()
    }
    env["index"] = torch.randint(0, 7, (2, 3, 4), generator=generator)
    exact = sum_and_gradients(call, env, 0.0)
    noisy = sum_and_gradients(call, env, reference.NOISE)
    # the terms' magnitudes: the same sums over absolute values (max pooling picks other entries there)
    absolute = {
        k: v.detach().abs().requires_grad_(v.requires_grad) if v.is_floating_point() else v
        for k, v in env.items()
    }
    magnitude = sum_and_gradients(call, absolute, 0.0)
    for value, moved, bound in zip(exact[1:], noisy[1:], magnitude[1:], strict=True):
        deviation = (moved - value).abs() / reference.NOISE
        assert torch.all(deviation[value != 0] > 0), f"{call}: a gradient the Monte Carlo mode leaves exact"
        if not call.startswith("max_pool"):
            assert torch.all(deviation <= bound * (1 + 1e-6)), f"{call}: moved by more than its terms"


def test_detach_keeps_the_value_and_stops_the_gradient(tmp_path: Path) -> None:
    """detach(x) is x as a constant: f = sum(detach(x) * x) is sum(x**2), its gradient x, not 2x (a
    backward pass that forgot one of x's two paths)."""
    spec = """
        id: detached
        title: A value through which no gradient flows
        entry: f
        args: [x]
        sizes: {N: {min: 1, max: 4}}
        inputs:
          x: {shape: [N], dist: normal, mean: 0, std: 1}
        graph: |
          f = sum(detach(x) * x)
        returns:
          - {name: f, value: f}
          - {name: dx, grad: {of: f, wrt: x}}
        solution: null
        starter: null
    """
    exercise = load_exercise(write_exercise(tmp_path / "detached", spec))
    references = compute_references(exercise, make_trials(exercise, 0, 5))
    for trial in references.trials:
        x = trial.inputs["x"]
        np.testing.assert_allclose(references.expected[trial.index]["f"], np.sum(x * x))
        np.testing.assert_allclose(references.expected[trial.index]["dx"], x)
