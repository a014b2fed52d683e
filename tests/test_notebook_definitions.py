"""`cells: definitions` runs no code of the notebook's at import: a definition whose decorators, default
values, annotations, bases, class keywords or class body would run something is skipped and told, with
its cell, line and reason, in the terminal, JSON and Gradescope outputs; honest definitions stay. Checked
from outside the grader: every refused part here raises if it runs, which would fail the import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import GRAPH2

from grader.handin import notebooks

RAISE = "raise RuntimeError('RAN AT IMPORT')"
BOOM = f"def boom():\n    {RAISE}\n\n"
# Definitions whose defining runs code: refused, each told with its cell and line.
REFUSED = {
    "decorator": f"def timer(f):\n    {RAISE}\n\n@timer\ndef helper(x):\n    return x",
    "default": BOOM + "def probe(x, d=boom()):\n    return x",
    "base": BOOM + "class A(boom()):\n    pass",
    "metaclass": f"class Meta(type):\n    def __new__(m, *a):\n        {RAISE}\n\n"
    "class B(metaclass=Meta):\n    pass",
    "class body": BOOM + "class C:\n    x = boom()",
    "init_subclass": f"class Base:\n    def __init_subclass__(cls):\n        {RAISE}\n\n"
    "class D(Base):\n    pass",
    "annotation": BOOM + "def typed(x: boom()) -> None:\n    return None",
}
# Constants that are no literals: left out as statements that do something, as always.
LEFT_OUT = {
    "operator constant": "import enum\nclass E(enum.Enum):\n    A = 1\n"
    f"    def __or__(self, o):\n        {RAISE}\nK = E.A | E.A",
    "lambda default": BOOM + "f_default = lambda x, d=boom(): x",
}
HONEST = (
    "import numpy as np\nimport torch\nEPS = 1e-5\nSCALE = 2 ** -3\nDTYPE = torch.float64\n"
    "class Layer:\n    '''A layer.'''\n    rate = 0.1\n    @staticmethod\n"
    "    def sig(z: np.ndarray, eps: float = EPS) -> np.ndarray:\n        return 1.0 / (1.0 + np.exp(-z))\n"
    "    @property\n    def p(self) -> float:\n        return self.rate\n    @p.setter\n"
    "    def p(self, value: float) -> None:\n        self.rate = value\n"
)
GRAPH = (
    "def graph2(W_np, x_np, b_np, dtype=DTYPE):\n"
    "    W = torch.tensor(W_np, dtype=dtype, requires_grad=True)\n"
    "    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()\n    f.backward()\n"
    "    s = Layer.sig(W_np @ x_np + b_np)\n    return f, W.grad, (s * (1 - s)) @ x_np.T"
)


def _notebook(path: Path, cells: list[str]) -> Path:
    document = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None}
            for c in cells
        ],
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_definitions_that_would_run_code_are_skipped_and_told(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "graph2.ipynb", [HONEST, *REFUSED.values(), *LEFT_OUT.values(), GRAPH])
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check", str(GRAPH2), str(path), "--trials", "20", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    result = json.loads(done.stdout)
    assert result["error"] is None and result["score"] == result["max_score"], result
    refused = result["notebook"]["refused_definitions"]
    # one cell each (the init_subclass cell twice: its class, and the class that would call it)
    cells = {int(told.split(",")[0].removeprefix("cell ")) for told in refused}
    assert cells == set(range(2, 2 + len(REFUSED))), refused
    assert all("skipped:" in told and "cells: all" in told for told in refused), refused
    terminal = subprocess.run(
        [sys.executable, "-m", "grader", "check", str(GRAPH2), str(path), "--trials", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "definition(s) skipped" in terminal.stdout and "`def helper` skipped" in terminal.stdout


def test_honest_definitions_are_kept_whole() -> None:
    converted = notebooks.convert(
        json.dumps({"cells": [{"cell_type": "code", "source": HONEST + "\n" + GRAPH}]}).encode(),
        Path("nb.ipynb"),
        notebooks.Selection("definitions"),
    )
    assert converted.refused == () and converted.left_out == 0
    assert "def sig" in converted.source and "@p.setter" in converted.source
