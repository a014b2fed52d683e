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
BOOM = f"def boom(*args):\n    {RAISE}\n\n"
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
    "lambda invoked": BOOM + "def lam(x, d=(lambda: boom())()):\n    return x",
    "module annotation": BOOM + "LIMIT: boom() = 3",
    "class annotation": BOOM + "class Config:\n    size: boom() = 3",
    "default in try": BOOM
    + "try:\n    def probe2(x, d=boom()):\n        return x\nexcept ImportError:\n    pass",
    "except clause": BOOM + "try:\n    import not_a_module_anywhere\nexcept boom():\n    pass",
    "hook assigned": BOOM + "class Hooked:\n    __init_subclass__ = boom\n\nclass Sub(Hooked):\n    pass",
    "class_getitem": f"class G:\n    def __class_getitem__(cls, item):\n        {RAISE}\n\n"
    "def typed2(x: G[int]) -> None:\n    return None",
    "enum member": f"import enum\nclass Colour(enum.Enum):\n    RED = 1\n    def __init__(self, value):\n"
    f"        {RAISE}",
    "enum base": "from enum import Enum as E0\nclass Base0(E0):\n    def __new__(cls, value):\n"
    f"        {RAISE}\n\nclass Colour2(Base0):\n    RED = 1",
    "rebound staticmethod": f"def staticmethod(f):\n    {RAISE}\n\nclass S:\n    @staticmethod\n"
    "    def g():\n        return 1",
    "setter of another class": BOOM + "class P:\n    setter = boom\n\nclass Q:\n    x = P\n    @x.setter\n"
    "    def g(self):\n        return 1",
    # an enumeration's members exist without a call: its dunder methods are refused, an operator on
    # them left out
    "enum operator": "import enum\nclass E(enum.Enum):\n    A = 1\n"
    f"    def __or__(self, o):\n        {RAISE}\nK = E.A | E.A",
    "metaclass operator": f"class Meta2(type):\n    def __add__(cls, other):\n        {RAISE}\n\n"
    "class K0(metaclass=Meta2):\n    pass\n\nK = K0 + 1",
}
# Constants that are no literals: left out as statements that do something, as always (not told).
LEFT_OUT = {
    "lambda default": BOOM + "f_default = lambda x, d=boom(): x",
}
HONEST = (
    "import enum\nimport numpy as np\ntry:\n    import torch\nexcept ImportError:\n    torch = None\n"
    "EPS = 1e-5\nSCALE = 2 ** -3\nTHIRD = 1 / 3\nDTYPE = torch.float64\nLIMIT: int = 3\n"
    "class Mode(enum.Enum):\n    TRAIN = 'train'\n    def label(self) -> str:\n        return self.value\n"
    "def act(z, f=lambda v: v, sizes=(3, 4), opts={'a': 1}):\n    return f(z)\n"
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


def test_annotations_are_not_evaluated_under_future_annotations() -> None:
    cells = [
        "from __future__ import annotations\nimport typing",
        "def f(x: typing.Optional(int)) -> None:\n    return None",
    ]
    converted = notebooks.convert(
        json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}).encode(),
        Path("nb.ipynb"),
        notebooks.Selection("definitions"),
    )
    assert converted.refused == () and "def f" in converted.source
    eager = notebooks.convert(
        json.dumps(
            {"cells": [{"cell_type": "code", "source": c} for c in ["import typing", cells[1]]]}
        ).encode(),
        Path("nb.ipynb"),
        notebooks.Selection("definitions"),
    )
    assert len(eager.refused) == 1 and "annotation" in eager.refused[0]
