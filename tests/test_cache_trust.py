"""The reference cache trusts only the grader: a notebook whose code patched torch, then checked its
functions in its own kernel (a real Jupyter kernel) and graded a file through the API, leaves nothing that
a later sandboxed `grader check` reads, so correct code still passes and the patched answer still fails."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, ROOT, grader_command, write_source
from nbclient import NotebookClient
from test_notebook_api import _kernel

from grader.exercise.settings import CACHE_ENV

TRIALS = 12
# What the notebook's code did before it checked: every sigmoid is now its tangent at 0, 1/2 + z/4.
# References computed in that kernel expect sum(1/2 + u/4) and a gradient of x^T/4 in every row, and the
# answer below, which computes exactly that, matches them.
PATCH = "import torch\ntorch.sigmoid = lambda z: 0.5 + z / 4\ntorch.Tensor.sigmoid = torch.sigmoid"
POISONED_ANSWER = """
import numpy as np

def graph2(W_np, x_np, b_np):
    u = W_np @ x_np + b_np
    grad = np.tile(x_np.T / 4, (W_np.shape[0], 1))
    return np.sum(0.5 + u / 4), grad, grad.copy()
"""


def _cli_check(file: Path, cache: Path) -> dict[str, Any]:
    done = subprocess.run(
        [*grader_command(), "check", str(GRAPH2), str(file), "--json", "--trials", str(TRIALS)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, CACHE_ENV: str(cache)},
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("cache-trust")
    cache = folder / "shared-cache"
    correct = write_source(folder / "correct.py", CORRECT_GRAPH2)
    answer = write_source(folder / "answer.py", POISONED_ANSWER)
    cell: Any = nbformat.v4.new_code_cell
    cells = [
        cell(f"import os\nos.environ[{CACHE_ENV!r}] = {str(cache)!r}\nimport grader, json\n" + PATCH),
        cell(textwrap.dedent(POISONED_ANSWER)),
        cell(
            f"checked = grader.check({str(GRAPH2)!r}, graph2, trials={TRIALS})\n"
            f"graded = grader.grade({str(GRAPH2)!r}, {str(correct)!r}, trials={TRIALS})\n"
            "print(json.dumps([checked.score, checked.max_score, graded.score]))"
        ),
    ]
    new_notebook: Any = nbformat.v4.new_notebook  # untyped in nbformat
    notebook = new_notebook(cells=cells)
    where = {"metadata": {"path": str(folder)}}
    client = NotebookClient(notebook, km=_kernel(folder), timeout=300, resources=where)
    client.execute()
    printed = "".join(o["text"] for o in notebook.cells[2].outputs if o["output_type"] == "stream")
    return {
        "kernel": json.loads(printed),
        "files": sorted(p.name for p in cache.glob("*.npz")) if cache.exists() else [],
        "correct": _cli_check(correct, cache),
        "answer": _cli_check(answer, cache),
    }


def test_the_patch_took_effect_in_the_kernel(poisoned: dict[str, Any]) -> None:
    """Else the test proves nothing: in the kernel, the patched answer matched the patched references, and
    correct code graded from there (the sandboxed API) was judged against them too."""
    checked, max_score, graded = poisoned["kernel"]
    assert checked == max_score and graded < max_score, poisoned["kernel"]


def test_the_kernel_wrote_nothing_others_read(poisoned: dict[str, Any]) -> None:
    assert poisoned["files"] == [], poisoned["files"]


def test_correct_code_still_passes_and_the_patched_answer_still_fails(poisoned: dict[str, Any]) -> None:
    correct, answer = poisoned["correct"], poisoned["answer"]
    assert correct["score"] == correct["max_score"], correct["returns"]
    assert answer["score"] == 0, answer["returns"]
