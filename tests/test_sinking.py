"""A class nobody can sink, where the class is graded on a Dask cluster (`--cluster local:2`: the hand-ins
run in zygotes of Dask's worker processes) and where each hand-in is graded alone (`grader gradescope`).

One hostile hand-in of each family that once sank a class or escaped its limits (returns of 60 MiB every
trial, a tensor subclass lying about its size, a forged result frame, a CPU deadline switched off inside
the worker, the autogroup's nice raised for the next job) sits between correct classmates: the classmates
keep full marks, each attacker gets its own error and no points, and the grader ends normally. The same
attacks run through `grader run` in both layers in tests/test_budgets.py, tests/test_deadlines.py and
tests/test_attacks.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, allow_subprocesses, copy_exercise, write_source
from test_budgets import _FORGE, _LIARS, BIG_RETURNS, FORGERIES, LYING_RETURNS, _handin
from test_deadlines import CORRECT_BODY, EVADED_BURN, EVASIONS

pytest.importorskip("distributed")

TRIALS = 6
LIMITS = "\nlimits: {trial_seconds: 1, first_call_seconds: 1, submission_seconds: 60, memory_mb: 2048}\n"
ATTACKERS = {
    "returns_60mib": (_handin(BIG_RETURNS["numpy60"]), "memory"),
    "lying_tensor": (_handin(LYING_RETURNS["tensor_subclass"], prelude=_LIARS), None),
    "forged_frame": (
        _handin(f"{FORGERIES['shape_2_84']}\nreturn f, auto_grad, user_grad", _FORGE),
        "protocol",
    ),
    "blocked_alarm": (
        "import numpy as np\nimport torch\n"
        f"{EVADED_BURN}\n\ndef graph2(W_np, x_np, b_np):\n{EVASIONS['blocked_alarm']}{CORRECT_BODY}",
        "timeout",
    ),
    "forked_burner": (
        "import numpy as np\nimport torch\n"
        f"{EVADED_BURN}\n\ndef graph2(W_np, x_np, b_np):\n{EVASIONS['forked_child']}{CORRECT_BODY}",
        "timeout",
    ),
}
CORRECT = textwrap.dedent(CORRECT_GRAPH2)
AUTOGROUP = "\ntry:\n    open('/proc/self/autogroup', 'w').write('19')\nexcept OSError:\n    pass\n"


def _grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_") or k == "GRADER_CACHE_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "grader", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def _course(root: Path) -> dict[str, str | None]:
    """exercises/graph2 and a class: each attacker followed by a classmate who checks what it inherits."""
    # The forked burner's child: the deadline must hold where a course allows children
    allow_subprocesses(root / "exercises")
    copy_exercise(root / "exercises" / "graph2", append=LIMITS)
    classmate = "import os\n" + CORRECT.replace(
        "def graph2(", "assert 'nice 0' in open('/proc/self/autogroup').read()\n\n\ndef graph2(", 1
    )
    kinds: dict[str, str | None] = {}
    attackers = {**ATTACKERS, "autogroup_nice": (CORRECT + AUTOGROUP, None)}
    for number, (name, (source, kind)) in enumerate(attackers.items()):
        write_source(root / "submissions" / f"s{number}a_{name}" / "hw.py", source)
        write_source(root / "submissions" / f"s{number}b_classmate" / "hw.py", classmate)
        kinds[f"s{number}a_{name}"] = kind
    return kinds


def _judged(results: dict[str, dict[str, Any]], kinds: dict[str, str | None], where: str) -> None:
    wrong = {}
    for student, result in results.items():
        if student.endswith("classmate") or student.endswith("autogroup_nice"):
            if result["score"] != result["max_score"]:
                wrong[student] = (result["error"], [r["message"] for r in result["returns"]])
        elif result["score"] >= result["max_score"] or (
            kinds[student] is not None and (result["error"] or {}).get("kind") != kinds[student]
        ):
            wrong[student] = (result["score"], result["error"])
    assert not wrong, f"{where}: {json.dumps(wrong, indent=1, default=str)[:6000]}"


def test_a_class_on_a_cluster_is_not_sunk(tmp_path: Path) -> None:
    kinds = _course(tmp_path)
    book = tmp_path / "book.sqlite"
    args = ["run", "exercises", "--cluster", "local:2", "--trials", str(TRIALS), "--json"]
    done = _grader(*args, "--gradebook", str(book), cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert len(results) == 2 * len(kinds), done.stderr[-3000:]
    _judged(results, kinds, "grader run --cluster local:2")


def test_gradescope_grades_each_attacker_alone_and_keeps_its_result(tmp_path: Path) -> None:
    kinds = _course(tmp_path)
    results = {}
    for student in kinds:
        out = tmp_path / "results" / student / "results.json"
        folder = str(tmp_path / "submissions" / student)
        done = _grader(
            "gradescope",
            "exercises",
            "--submission",
            folder,
            "--results",
            str(out),
            "--trials",
            str(TRIALS),
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        graded = json.loads(out.read_text(encoding="utf-8"))
        assert graded["score"] < 10 or student.endswith("autogroup_nice"), (student, graded["output"])
        results[student] = graded
    assert all(r["score"] == 10 for s, r in results.items() if s.endswith("autogroup_nice"))
