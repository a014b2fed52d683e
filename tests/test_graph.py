"""The graph language: an allow-list over Python syntax, evaluated over torch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.exercise.graph import (
    GraphError,
    evaluate,
    evaluate_size_expression,
    parse,
    size_expression_names,
)

KNOWN = ["x", "y", "W", "idx", "n"]


def rejected(source: str, known: list[str] = KNOWN) -> GraphError:
    with pytest.raises(GraphError) as info:
        parse(source, known)
    return info.value


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("import os", "assignment"),
        ("from os import system", "assignment"),
        ("y2 = __import__('os')", "'__import__' is not an allowed function"),
        ("y2 = open('/etc/passwd')", "'open' is not an allowed function"),
        ("y2 = eval('1')", "'eval' is not an allowed function"),
        ("y2 = getattr(x, 'T')", "'getattr' is not an allowed function"),
        ("y2 = torch.exp(x)", "'torch.exp' is not an allowed function"),
        ("y2 = x.sum()", "not an allowed function"),
        ("y2 = x.shape", "attribute .shape"),
        ("y2 = x.__class__", "attribute .__class__"),
        ("y2 = x.T.__class__.__bases__", "attribute"),
        ("y2 = (lambda a: a)(x)", "not an allowed function"),
        ("y2 = lambda a: a", "Lambda"),
        ("y2 = [a for a in x]", "ListComp"),
        ("y2 = {a: a for a in x}", "DictComp"),
        ("y2 = sum(a for a in x)", "GeneratorExp"),
        ("y2 = [x, y]", "List"),
        ("y2 = 'text'", "numeric constants"),
        ("y2 = x if n else y", "IfExp"),
        ("y2 = x and y", "BoolOp"),
        ("y2 = not x", "Not"),
        ("y2 = exp(*x)", "*args"),
        ("y2 = sum(x, axis=0)", "keyword 'axis'"),
        ("y2 = exp(x, out=y)", "keyword 'out'"),
        ("y2 = undefined_name + 1", "'undefined_name' is not defined"),
        ("y2 = exp", "must be called"),
        ("sum = x", "is a function of the language"),
        ("x[0] = 1", "assignment"),
        ("a, b = x, y", "assignment"),
        ("y2 += x", "assignment"),
        ("def f():\n    return 1", "assignment"),
        ("y2 = x < y < W", "single comparisons"),
        ("y2 = x[...]", "constants"),
        ("y2 = x is y", "single comparisons"),
        ("y2 = f'{x}'", "JoinedStr"),
        ("", "empty"),
        ("y2 = max(0, x)", "max() takes 1 arguments, not 2: max(x, dim=None, keepdim=False), a reduction"),
        ("y2 = one_hot(idx)", "one_hot() takes 2 arguments, not 1: one_hot(labels, classes)"),
        ("y2 = where(x > 0, x)", "where() takes 3 arguments, not 2"),
        ("y2 = reshape(x)", "reshape() takes at least 2 arguments, not 1"),
    ],
)
def test_allow_list_rejects(source: str, words: str) -> None:
    assert words in rejected(source).message


def test_rejected_line_is_reported() -> None:
    error = rejected("a = x + 1\nb = a * 2\nc = open(b)")
    assert error.line == 3
    assert "open" in error.message


def test_names_must_be_assigned_before_use() -> None:
    assert rejected("a = b\nb = x").line == 1
    assert parse("b = x\na = b", KNOWN).defined == ("b", "a")


@pytest.mark.parametrize(
    "source",
    [
        "y2 = x.T",
        "y2 = W @ x + 1 - y * 2 / 3 ** 2",
        "y2 = -x + (+y)",
        "y2 = x[0:2, idx]",
        "y2 = x[::2]",
        "y2 = sum(x, dim=(0, 1))",
        "y2 = where(x > 0, x, 0)",
        "y2 = clamp(x, min=0, max=1)",
    ],
)
def test_allow_list_accepts(source: str) -> None:
    assert parse(source, KNOWN).defined == ("y2",)


def run(source: str, **env: object) -> object:
    program = parse(source, list(env))
    return evaluate(program, env)[program.defined[-1]]


@pytest.fixture
def x() -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(3, 4, generator=generator, dtype=torch.float64)


def close(got: object, expected: torch.Tensor) -> None:
    assert isinstance(got, torch.Tensor)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-15)


def test_arithmetic_and_matmul_and_T(x: torch.Tensor) -> None:
    W = torch.arange(12, dtype=torch.float64).reshape(4, 3)
    close(run("z = (x @ W).T * 2 - 1", x=x, W=W), (x @ W).T * 2 - 1)
    close(run("z = x ** 2 / 3", x=x), x**2 / 3)
    close(run("z = x.T", x=x), x.transpose(0, 1))
    v = torch.arange(3, dtype=torch.float64)
    close(run("z = v.T", v=v), v)  # .T of a vector is the vector, as in numpy


@pytest.mark.parametrize(
    ("source", "reference"),
    [
        ("z = sum(x)", lambda x: x.sum()),
        ("z = sum(x, dim=0)", lambda x: x.sum(0)),
        ("z = sum(x, dim=1)", lambda x: x.sum(1)),
        ("z = sum(x, dim=-1)", lambda x: x.sum(-1)),
        ("z = sum(x, dim=(0, 1))", lambda x: x.sum((0, 1))),
        ("z = mean(x, dim=0)", lambda x: x.mean(0)),
        ("z = mean(x)", lambda x: x.mean()),
        ("z = max(x, dim=1)", lambda x: x.amax(1)),
        ("z = max(x)", lambda x: x.max()),
        ("z = min(x, dim=0)", lambda x: x.amin(0)),
        ("z = logsumexp(x, dim=1)", lambda x: torch.logsumexp(x, 1)),
        ("z = softmax(x, dim=0)", lambda x: torch.softmax(x, 0)),
        ("z = softmax(x)", lambda x: torch.softmax(x, -1)),
        ("z = log_softmax(x, dim=1)", lambda x: torch.log_softmax(x, 1)),
        ("z = exp(x) + log(abs(x)) + sqrt(abs(x))", lambda x: x.exp() + x.abs().log() + x.abs().sqrt()),
        ("z = sigmoid(x) * tanh(x) + relu(x)", lambda x: torch.sigmoid(x) * torch.tanh(x) + torch.relu(x)),
        ("z = where(x > 0, x, 0)", lambda x: torch.where(x > 0, x, torch.zeros_like(x))),
        ("z = where(x > 0, 0.5, x)", lambda x: torch.where(x > 0, torch.full_like(x, 0.5), x)),
        ("z = clamp(x, min=-0.5, max=0.5)", lambda x: x.clamp(-0.5, 0.5)),
        ("z = reshape(x, 4, 3)", lambda x: x.reshape(4, 3)),
        ("z = reshape(x, -1)", lambda x: x.reshape(-1)),
        ("z = transpose(x)", lambda x: x.transpose(0, 1)),
        ("z = matmul(x, x.T)", lambda x: x @ x.T),
        ("z = x[1]", lambda x: x[1]),
        ("z = x[:, 1:3]", lambda x: x[:, 1:3]),
        ("z = x[-1, ::2]", lambda x: x[-1, ::2]),
        # np.var's convention by default (batch normalisation's); unbiased=True divides by n - 1
        ("z = var(x, dim=0)", lambda x: x.var(0, unbiased=False)),
        ("z = var(x, dim=0, unbiased=True)", lambda x: x.var(0, unbiased=True)),
        ("z = std(x, dim=1, keepdim=True)", lambda x: x.std(1, unbiased=False, keepdim=True)),
        ("z = var(x)", lambda x: x.var(unbiased=False)),
        ("z = cumsum(x, dim=1)", lambda x: x.cumsum(1)),
        ("z = permute(reshape(x, 3, 2, 2), 2, 0, 1)", lambda x: x.reshape(3, 2, 2).permute(2, 0, 1)),
    ],
)
def test_evaluates_like_torch(x: torch.Tensor, source: str, reference) -> None:  # type: ignore[no-untyped-def]
    close(run(source, x=x), reference(x))


@pytest.mark.parametrize(
    ("source", "reference"),
    [
        ("z = sum(x, dim=1, keepdim=True)", lambda x: x.sum(1, keepdim=True)),
        ("z = mean(x, dim=0, keepdim=True)", lambda x: x.mean(0, keepdim=True)),
        ("z = max(x, dim=1, keepdim=True)", lambda x: x.amax(1, keepdim=True)),
        ("z = logsumexp(x, dim=1, keepdim=True)", lambda x: torch.logsumexp(x, 1, keepdim=True)),
        ("z = x - logsumexp(x, dim=1, keepdim=True)", lambda x: x - torch.logsumexp(x, 1, keepdim=True)),
    ],
)
def test_reductions_with_keepdim(x: torch.Tensor, source: str, reference) -> None:  # type: ignore[no-untyped-def]
    close(run(source, x=x), reference(x))


def test_indexing_with_integer_tensors(x: torch.Tensor) -> None:
    labels = torch.tensor([3, 0, 2])
    close(run("z = x[arange(n), labels]", x=x, labels=labels, n=3), x[torch.arange(3), labels])
    close(
        run("z = x[labels]", x=torch.arange(5, dtype=torch.float64), labels=labels),
        torch.tensor([3.0, 0.0, 2.0], dtype=torch.float64),
    )
    close(run("z = one_hot(labels, 4)", labels=labels), torch.eye(4, dtype=torch.float64)[labels])


def test_sizes_and_scalars_take_part(x: torch.Tensor) -> None:
    close(run("z = sum(x) / n + lam * 2", x=x, n=4, lam=0.5), x.sum() / 4 + 1.0)


def test_multi_line_program_returns_every_name(x: torch.Tensor) -> None:
    program = parse("u = x * 2\nv = exp(u)\nw = sum(v)", ["x"])
    values = evaluate(program, {"x": x})
    assert set(values) == {"x", "u", "v", "w"}
    close(values["w"], torch.exp(x * 2).sum())


def test_gradients_flow_through_the_graph(x: torch.Tensor) -> None:
    W = x.clone().requires_grad_(True)
    value = run("f = sum(sigmoid(W) * W)", W=W)
    assert isinstance(value, torch.Tensor)
    (grad,) = torch.autograd.grad(value, W)
    s = torch.sigmoid(x)
    torch.testing.assert_close(grad, s + x * s * (1 - s))


@given(
    a=st.integers(min_value=0, max_value=50),
    b=st.integers(min_value=1, max_value=50),
)
def test_size_expressions(a: int, b: int) -> None:
    sizes = {"n": a, "m": b}
    assert evaluate_size_expression("n", sizes) == a
    assert evaluate_size_expression(7, sizes) == 7
    assert evaluate_size_expression("n * m + 1", sizes) == a * b + 1
    assert evaluate_size_expression("n // m", sizes) == a // b
    assert evaluate_size_expression("n % m - 1", sizes) == a % b - 1


@pytest.mark.parametrize("text", ["k", "n.real", "len(n)", "n[0]", "n < 3", "__import__('os')", "n +"])
def test_size_expressions_are_checked(text: str) -> None:
    with pytest.raises(GraphError):
        size_expression_names(text, ["n"])


def test_graph_never_runs_python(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Nothing in an accepted graph can reach the file system: the dangerous spellings don't parse."""
    marker = tmp_path / "pwned"
    for source in (
        f"z = open('{marker}', 'w')",
        f"z = __import__('pathlib').Path('{marker}').touch()",
        "z = x.__class__.__mro__",
    ):
        with pytest.raises(GraphError):
            parse(source, ["x"])
    assert not marker.exists()


def test_a_graph_failing_on_its_inputs_names_the_line() -> None:
    program = parse("a = x + 1\nb = reshape(a, 3, 3)", ["x"])
    with pytest.raises(GraphError) as raised:
        evaluate(program, {"x": torch.ones(2)})
    assert raised.value.line == 2
    assert "`b = reshape(a, 3, 3)` fails" in raised.value.message


def test_softplus_is_exact_in_float64() -> None:
    x = torch.tensor([25.0, 30.0, -30.0], dtype=torch.float64)
    values = evaluate(parse("s = softplus(x)", ["x"]), {"x": x})
    exact = torch.log1p(torch.exp(-x.abs())) + x.clamp(min=0)
    assert torch.equal(values["s"], exact)


def test_var_and_std_stay_usable_as_names(x: torch.Tensor) -> None:
    """Graphs written before var() and std() existed name a value var: they keep working."""
    close(
        run("var = mean(x * x, dim=0)\nz = sqrt(var) + var(x, dim=0)", x=x),
        (x * x).mean(0).sqrt() + x.var(0, unbiased=False),
    )
