"""Forged grades, checked from outside the grader, in every way a course grades: `grader run` in both
isolation layers, `grader run --cluster local:2`, `grader gradescope`, and (for what a student's own check
must catch too) `grader check`.

The forgers compute nothing or copy autograd: tables of graph2's answers for every seed a hand-in could
know (the default 0 and its neighbours, looked up by input, by call number or by size and first entry),
and a user_grad taken from autograd past the check (plainly, memoized, with the check's factor probed and
divided out, through the engine captured at import, through forward mode, by calling the graph's grad_fn
nodes, from a fresh interpreter or a process forked at import, with finite differences where the check is
probed, or ending the process when it sees the check). Each must lose what it forged; the honest
classmates beside them — one of them stateful, its answers cached by input and counted by call — keep full
marks.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, copy_exercise, write_source

from grader.exercise.spec import load_exercise
from grader.exercise.trials import make_trials
from grader.sandbox import isolation

TRIALS = 20
KNOWN_SEEDS = (0, 1, 2, 3)
LIMITS = "\nlimits: {trial_seconds: 5, submission_seconds: 60, import_seconds: 30, memory_mb: 2048}\n"


def _answers(seed: int) -> list[dict[str, Any]]:
    """graph2's right answers on the trials of `seed`, as a table a hand-in could carry."""
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(CORRECT_GRAPH2), namespace)
    rows = []
    for trial in make_trials(load_exercise(GRAPH2), seed, TRIALS):
        W, x, b = (trial.inputs[n] for n in ("W_np", "x_np", "b_np"))
        f, auto_grad, user_grad = namespace["graph2"](W, x, b)
        digest = hashlib.sha256(W.tobytes() + x.tobytes() + b.tobytes()).hexdigest()
        rows.append(
            {
                "digest": digest,
                "d": int(W.shape[0]),
                "first": float(W[0, 0]),
                "f": float(f.detach()),
                "auto_grad": auto_grad.numpy().tolist(),
                "user_grad": np.asarray(user_grad).tolist(),
            }
        )
    return rows


_TABLE_HEAD = """
import hashlib, json
import numpy as np
import torch

ROWS = json.loads({rows!r})
CALLS = [0]


def _answer(row):
    return torch.tensor(row["f"]), torch.tensor(row["auto_grad"]), np.array(row["user_grad"])


def _nothing(W_np):
    return torch.tensor(0.0), torch.zeros(W_np.shape, dtype=torch.float64), np.zeros_like(W_np)
"""

TABLES = {
    "table_by_input": """
def graph2(W_np, x_np, b_np):
    digest = hashlib.sha256(W_np.tobytes() + x_np.tobytes() + b_np.tobytes()).hexdigest()
    for row in ROWS:
        if row["digest"] == digest:
            return _answer(row)
    return _nothing(W_np)
""",
    "table_by_call": """
def graph2(W_np, x_np, b_np):
    CALLS[0] += 1
    for row in ROWS[(CALLS[0] - 1) % {trials}::{trials}]:  # the n-th trial of each known seed
        if row["d"] == W_np.shape[0] and row["first"] == float(W_np[0, 0]):
            return _answer(row)
    row = ROWS[(CALLS[0] - 1) % len(ROWS)]
    return _answer(row) if row["d"] == W_np.shape[0] else _nothing(W_np)
""",
    "table_by_size": """
def graph2(W_np, x_np, b_np):
    near = [r for r in ROWS if r["d"] == W_np.shape[0]]
    if not near:
        return _nothing(W_np)
    return _answer(min(near, key=lambda r: abs(r["first"] - float(W_np[0, 0]))))
""",
}

_FORWARD = """
import numpy as np
import torch


def _forward(W, x_np, b_np):
    return torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
"""

COPIES = {
    "copy_plain": """
def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad.numpy().copy()
""",
    "copy_memoized": """
MEMO = {}

def graph2(W_np, x_np, b_np):
    key = W_np.tobytes() + x_np.tobytes() + b_np.tobytes()
    if key not in MEMO:
        W = torch.tensor(W_np, requires_grad=True)
        f = _forward(W, x_np, b_np)
        f.backward()
        MEMO[key] = (f.detach(), W.grad.clone(), W.grad.numpy().copy())
    return MEMO[key]
""",
    "copy_probe_divided": """
def _scale():
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    (p * 1.0).backward()
    return float(p.grad)

def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad.numpy() / _scale()
""",
    "copy_probe_in_the_same_call": """
def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    p = torch.zeros((), dtype=torch.float64, requires_grad=True)
    f = _forward(W, x_np, b_np)
    (f + p).backward()
    return f, W.grad, W.grad.numpy() / float(p.grad)
""",
    "copy_engine_captured_at_import": """
from torch.autograd.variable import Variable

ENGINE = Variable._execution_engine

def graph2(W_np, x_np, b_np):
    now, Variable._execution_engine = Variable._execution_engine, ENGINE
    try:
        W = torch.tensor(W_np, requires_grad=True)
        f = _forward(W, x_np, b_np)
        f.backward()
    finally:
        Variable._execution_engine = now
    return f, W.grad, W.grad.numpy().copy()
""",
    "copy_fresh_engine": """
def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    engine = torch._C._ImperativeEngine()
    (grad,) = engine.run_backward((f,), (torch.ones_like(f),), False, False, (W,), False, False)
    f2 = _forward(torch.tensor(W_np, requires_grad=True), x_np, b_np)
    f2.backward()
    return f2, grad.detach().clone(), grad.detach().numpy().copy()
""",
    "copy_forward_mode": """
def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    jac = torch.func.jacfwd(lambda w: _forward(w, x_np, b_np))(torch.tensor(W_np))
    return f, W.grad, jac.numpy().copy()
""",
    "copy_jvp": """
def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    grad = np.zeros_like(W_np)
    for i in range(W_np.shape[0]):
        for j in range(W_np.shape[1]):
            tangent = torch.zeros_like(torch.tensor(W_np))
            tangent[i, j] = 1.0
            _, out = torch.func.jvp(lambda w: _forward(w, x_np, b_np), (torch.tensor(W_np),), (tangent,))
            grad[i, j] = float(out)
    return f, W.grad, grad
""",
    "copy_exits_when_checked": """
import os

def graph2(W_np, x_np, b_np):
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    (p * 1.0).backward()
    if float(p.grad) != 1.0:
        os._exit(0)
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad.numpy().copy()
""",
    "copy_raises_when_checked": """
def graph2(W_np, x_np, b_np):
    p = torch.ones((), dtype=torch.float64, requires_grad=True)
    (p * 1.0).backward()
    if float(p.grad) != 1.0:
        raise RuntimeError("not now")
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    return f, W.grad, W.grad.numpy().copy()
""",
    "copy_by_grad_fn_nodes": """
def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    pending, found = [(f.grad_fn, torch.ones((), dtype=torch.float64))], torch.zeros_like(W)
    while pending:
        node, grad = pending.pop()
        outputs = node(grad)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        for (after, _), out in zip(node.next_functions, outputs):
            if after is None or out is None:
                continue
            if getattr(after, "variable", None) is W:
                found = found + out
            elif not hasattr(after, "variable"):
                pending.append((after, out))
    f.backward()
    return f, W.grad, found.detach().numpy().copy()
""",
    "copy_from_a_fresh_interpreter": """
import json
import subprocess
import sys

CHILD = (
    "import json, sys, torch\\n"
    "W, x, b = (torch.tensor(v, dtype=torch.float64) for v in json.load(sys.stdin))\\n"
    "W.requires_grad_(True)\\n"
    "torch.sigmoid(W @ x + b).sum().backward()\\n"
    "print(json.dumps(W.grad.tolist()))\\n"
)

def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    sent = json.dumps([W_np.tolist(), x_np.tolist(), b_np.tolist()])
    done = subprocess.run([sys.executable, "-c", CHILD], input=sent, capture_output=True, text=True)
    return f, W.grad, np.array(json.loads(done.stdout))
""",
    "copy_from_a_fork_made_at_import": """
import os
import pickle

ASK, ANSWER = os.pipe(), os.pipe()


def _read(fd):
    size = int.from_bytes(os.read(fd, 8), "little")
    data = b""
    while len(data) < size:
        data += os.read(fd, size - len(data))
    return pickle.loads(data)


def _write(fd, value):
    data = pickle.dumps(value)
    os.write(fd, len(data).to_bytes(8, "little") + data)


if os.fork() == 0:
    while True:
        W_np, x_np, b_np = _read(ASK[0])
        W = torch.tensor(W_np, requires_grad=True)
        _forward(W, x_np, b_np).backward()
        _write(ANSWER[1], W.grad.numpy())


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    _write(ASK[1], (W_np, x_np, b_np))
    return f, W.grad, _read(ANSWER[0])
""",
    "copy_then_differences_where_checked": """
def graph2(W_np, x_np, b_np):
    p = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    (p ** 3).backward()
    W = torch.tensor(W_np, requires_grad=True)
    f = _forward(W, x_np, b_np)
    f.backward()
    if float(p.grad) == 12.0:
        return f, W.grad, W.grad.numpy().copy()
    user = np.zeros_like(W_np)
    for k in range(W_np.size):
        step = np.zeros_like(W_np)
        step.flat[k] = 1e-5
        up = float(_forward(torch.tensor(W_np + step), x_np, b_np))
        down = float(_forward(torch.tensor(W_np - step), x_np, b_np))
        user.flat[k] = (up - down) / 2e-5
    return f, W.grad, user
""",
}

STATEFUL_HONEST = """
import numpy as np
import torch

CALLS = []
CACHE = {}


def graph2(W_np, x_np, b_np):
    CALLS.append(W_np.shape[0])  # counted, and cached by input: answers that depend on earlier calls
    key = W_np.tobytes() + x_np.tobytes() + b_np.tobytes()
    if key not in CACHE:
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        f.backward()
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        CACHE[key] = (f.detach(), W.grad, (s * (1 - s)) @ x_np.T * (1.0 + 0.0 * len(CALLS)))
    return CACHE[key]
"""


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _grader(layer: str, *args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_") or k == "GRADER_CACHE_DIR"}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """exercises/graph2 and submissions/<forger or honest student>/hw.py."""
    root = tmp_path_factory.mktemp("forgery")
    copy_exercise(root / "exercises" / "graph2", append=LIMITS)
    rows = json.dumps([row for seed in KNOWN_SEEDS for row in _answers(seed)])
    for name, body in TABLES.items():
        source = _TABLE_HEAD.format(rows=rows) + body.replace("{trials}", str(TRIALS))
        write_source(root / "submissions" / name / "hw.py", source)
    for name, body in COPIES.items():
        write_source(root / "submissions" / name / "hw.py", _FORWARD + body)
    write_source(root / "submissions" / "honest" / "hw.py", CORRECT_GRAPH2)
    write_source(root / "submissions" / "honest_stateful" / "hw.py", STATEFUL_HONEST)
    return root


def _lines(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return {r["student"]: r for r in map(json.loads, done.stdout.splitlines()) if r.get("student")}


def _score(result: dict[str, Any], name: str) -> float:
    return float(next(r["score"] for r in result["returns"] if r["name"] == name))


def _judged(results: dict[str, dict[str, Any]], where: str) -> None:
    """Every forger lost what it forged; every honest student kept full marks."""
    wrong: dict[str, Any] = {}
    for name, result in results.items():
        if name.startswith("honest"):
            if result["score"] != result["max_score"]:
                wrong[name] = [(r["name"], r["verdict"], r["message"]) for r in result["returns"]]
        elif name.startswith("table") and result["score"] > 0:
            wrong[name] = f"scored {result['score']} with a table of answers"
        elif name.startswith("copy") and _score(result, "user_grad") > 0:
            wrong[name] = [(r["name"], r["verdict"], r["message"]) for r in result["returns"]]
    assert not wrong, f"{where}: {json.dumps(wrong, indent=1)[:6000]}"


@pytest.mark.parametrize("layer", _layers())
def test_a_class_run_gives_forgers_nothing(course: Path, layer: str, tmp_path: Path) -> None:
    book = tmp_path / "book.sqlite"
    done = _grader(
        layer,
        "run",
        "exercises",
        "-j",
        "2",
        "--trials",
        str(TRIALS),
        "--json",
        "--gradebook",
        str(book),
        cwd=course,
    )
    results = _lines(done)
    assert len(results) == len(TABLES) + len(COPIES) + 2
    _judged(results, f"grader run ({layer})")


def test_a_cluster_run_gives_forgers_nothing(course: Path, tmp_path: Path) -> None:
    book = tmp_path / "book.sqlite"
    args = (
        "run",
        "exercises",
        "--cluster",
        "local:2",
        "--trials",
        str(TRIALS),
        "--json",
        "--gradebook",
        str(book),
    )
    _judged(_lines(_grader("bubblewrap", *args, cwd=course)), "grader run --cluster local:2")


def test_gradescope_gives_forgers_nothing(course: Path, tmp_path: Path) -> None:
    results = {}
    # one of each family (a submission a grading: each pays its own references, its own seed's)
    chosen = ("table_by_input", "table_by_call", "copy_probe_in_the_same_call", "copy_forward_mode")
    for folder in [course / "submissions" / name for name in (*chosen, "honest_stateful")]:
        out = tmp_path / folder.name / "results.json"
        done = _grader(
            "bubblewrap",
            "gradescope",
            "exercises",
            "--submission",
            str(folder),
            "--results",
            str(out),
            "--trials",
            str(TRIALS),
            cwd=course,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        graded = json.loads(out.read_text())
        tests = {t["name"]: t for t in graded["tests"]}
        user = next(t for n, t in tests.items() if "user_grad" in n)
        results[folder.name] = {
            "score": graded["score"],
            "max_score": graded.get("max_score", 10),
            "returns": [
                {
                    "name": "user_grad",
                    "score": user["score"],
                    "verdict": "",
                    "message": user.get("output", ""),
                }
            ],
        }
    _judged(results, "grader gradescope")


def test_a_students_own_check_catches_autograd_copies(course: Path) -> None:
    """`grader check` keeps its fixed seed (a table for seed 0 passes there: it is the student's own
    check, and graded work draws a secret seed), but no copy of autograd passes it."""
    wrong: dict[str, Any] = {}
    # One of each way of copying (a check a subprocess: every copy is graded in the class runs above).
    chosen = ("copy_plain", "copy_probe_in_the_same_call", "copy_fresh_engine", "copy_forward_mode")
    for name in (*chosen, "copy_exits_when_checked", "honest_stateful"):
        done = _grader(
            "bubblewrap",
            "check",
            "exercises/graph2",
            f"submissions/{name}/hw.py",
            "--trials",
            str(TRIALS),
            "--json",
            cwd=course,
        )
        assert done.returncode in (0, 1), (name, done.stderr[-2000:])
        result = json.loads(done.stdout)
        honest = name.startswith("honest")
        if (result["score"] == result["max_score"]) != honest or (
            not honest and _score(result, "user_grad") > 0
        ):
            wrong[name] = [(r["name"], r["verdict"], r["message"]) for r in result["returns"]]
    assert not wrong, json.dumps(wrong, indent=1)[:6000]
