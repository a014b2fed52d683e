"""`grader new ID`: a new exercise folder that already validates, to be edited into the real one."""

from __future__ import annotations

import re
from pathlib import Path

from grader.errors import UsageError

_SPEC = """\
# Written by `grader new {id}`. Every field is explained in the README ("Writing an exercise").
# Edit it into your exercise, then run: grader validate {folder}
id: {id}
title: Gradient of a small tanh layer (edit me)
# What students read: shapes, the formula, what to return, hints.
description: |
  W has shape (m, n) and x has shape (n,), float64 numpy arrays (n, m from 1 to 6).
  Compute h = tanh(W @ x) and loss = sum(h ** 2), and return:
    loss  the value of the loss (a number, or a one-element array or tensor),
    dW    d loss / dW, derived by hand, shape (m, n).
  Hint: d loss / dW = outer(2 h (1 - h^2), x).
entry: {entry}                    # the function students write
args: [W, x]                      # its parameters in order; a nested list is a tuple argument ([x, w, b])
sizes:                            # drawn per trial; a plain integer fixes a size
  n: {{min: 1, max: 6}}
  m: {{min: 1, max: 6}}
inputs:                           # float64 arrays; integer labels: {{dist: integer, low: 0, high: C - 1}}
  W: {{shape: [m, n], dist: normal, std: 0.5}}   # keeps tanh out of saturation, so mistakes show
  x: {{shape: [n], dist: normal}}
# How the grader computes the expected returns, in float64 (one assignment per line).
graph: |
  h = tanh(W @ x)
  loss = sum(h * h)
returns:                          # the tuple the entry returns, in order
  - {{name: loss, value: loss}}
  - {{name: dW, grad: {{of: loss, wrt: W}}}}
trials: 1000
points: {{loss: 1, dW: 3}}
solution: solution.py
starter: starter.py
# Known-wrong solutions: each declares the verdict of every return; `grader validate` checks them.
wrong:
  - file: wrong/sign.py
    mistake: "dW with the sign flipped"
    expect: {{loss: pass, dW: logic}}
"""

_SOLUTION = """\
import numpy as np


def {entry}(W, x):
    h = np.tanh(W @ x)
    loss = np.sum(h**2)
    dW = np.outer(2 * h * (1 - h**2), x)
    return loss, dW
"""

_WRONG_SIGN = """\
import numpy as np


def {entry}(W, x):
    h = np.tanh(W @ x)
    loss = np.sum(h**2)
    dW = -np.outer(2 * h * (1 - h**2), x)  # sign flipped
    return loss, dW
"""

_STARTER = """\
import numpy as np


def {entry}(W, x):
    \"\"\"Return loss = sum(tanh(W @ x) ** 2) and its gradient d loss / dW.

    Args:
        W: float64 numpy array of shape (m, n).
        x: float64 numpy array of shape (n,).

    Returns:
        loss: a number (or one-element array).
        dW: float64 numpy array of shape (m, n).
    \"\"\"
    # YOUR CODE HERE
    raise NotImplementedError("{entry} is not written yet")
    # END YOUR CODE
    return loss, dW
"""


def create(folder: Path) -> list[Path]:
    """Write the scaffold into `folder` (which must not exist yet); returns the files written."""
    exercise_id = folder.name
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", exercise_id):
        raise UsageError(f"'{exercise_id}': an exercise id is letters, digits, '_', '.' and '-'")
    if folder.exists():
        raise UsageError(f"{folder} already exists: pick another id, or edit that exercise")
    entry = re.sub(r"\W", "_", exercise_id)
    if entry[0].isdigit():
        entry = f"_{entry}"
    files = {
        "exercise.yaml": _SPEC.format(id=exercise_id, entry=entry, folder=folder),
        "solution.py": _SOLUTION.format(entry=entry),
        "starter.py": _STARTER.format(entry=entry),
        "wrong/sign.py": _WRONG_SIGN.format(entry=entry),
    }
    written = []
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
