"""The course helper modules shipped as exercises' support files: CS224n's `utils` package and MAC0460's
util.py and plots.py. Real hand-ins call them inside graded code, so their maths must be right."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from conftest import EXERCISES


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cs224n_utils() -> Iterator[ModuleType]:
    folder = EXERCISES / "cs224n" / "a2" / "_support" / "utils"
    yield load(folder / "utils.py", "cs224n_support_utils")
    sys.modules.pop("cs224n_support_utils", None)


def test_cs224n_softmax_is_shifted_rowwise_and_leaves_its_input(cs224n_utils: ModuleType) -> None:
    x = np.array([[1000.0, 1001.0, 999.0], [-3.0, 0.0, 2.0]])
    before = x.copy()
    p = cs224n_utils.softmax(x)
    assert np.array_equal(x, before)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1)
    shifted = np.exp(x - x.max(axis=1, keepdims=True))
    assert np.allclose(p, shifted / shifted.sum(axis=1, keepdims=True), rtol=1e-15, atol=0)
    assert np.allclose(cs224n_utils.softmax(x[1]), p[1])  # a vector as one row
    assert cs224n_utils.softmax(x.astype(np.float32)).dtype == np.float32


def test_cs224n_normalize_rows_and_the_gradcheck_stubs(cs224n_utils: ModuleType) -> None:
    rows = cs224n_utils.normalizeRows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
    gradcheck = load(EXERCISES / "cs224n" / "a2" / "_support" / "utils" / "gradcheck.py", "cs224n_gc")
    assert gradcheck.gradcheck_naive(lambda x: (0.0, x), np.zeros(2), "text") is None
    assert gradcheck.grad_tests_softmax(None, [], None, None) is None


def test_mac0460_util_sigmoid_randomize_and_plots() -> None:
    folder = EXERCISES / "mac0460" / "_support"
    util = load(folder / "util.py", "mac0460_util")
    x = np.array([-800.0, -5.0, 0.0, 5.0, 800.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # exp(-800) underflows to 0, rightly
        s = util.sigmoid(x)
    assert np.allclose(s, [0.0, 1 / (1 + np.exp(5)), 0.5, 1 / (1 + np.exp(-5)), 1.0], rtol=1e-15, atol=0)
    assert util.sigmoid(x.astype(np.float32)).dtype == np.float32
    a, b = np.arange(6.0), np.arange(6.0) * 10
    util.randomize_in_place(a, b, 3)
    assert np.array_equal(b, a * 10) and sorted(a) == list(range(6))
    X, y = util.get_housing_prices_data(20, verbose=False)
    assert X.shape == y.shape == (20, 1) and y.min() > 0
    assert util.add_feature_ones(X).shape == (20, 2)
    plots = load(folder / "plots.py", "mac0460_plots")
    assert plots.simple_step_plot([1, 2], "t") is None
    assert plots.plot_points_regression(X, y, "t", "x", "y") is None
