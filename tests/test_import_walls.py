"""The course's package list is a wall (sandbox/course_view.py, sandbox/walls.py), checked from outside
the grader: the real `grader run` and `grader check` in a subprocess, in both layers. A hand-in whose
course declares nothing reaches no undeclared installed package (yaml and pydantic, the grader's own
dependencies; hypothesis; matplotlib) and none of the grader's modules beyond the worker's, by any of the
routes seen: a compiled file loaded by name, pkgutil, a spec made by hand, the finder removed, a
`grader.*` import, the same packages in another folder. Each attack raises naming what it reached, so
full marks mean every route held; each route reaches its package when run without the sandbox. Honest
hand-ins (numpy, torch with torch.func and `backward(v)`, math, a declared matplotlib) keep full marks,
and an undeclared import is told by name and course.yaml, without a machine path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import copy_exercise, grader_run, layer_env, write_source

from grader.sandbox import course_view, isolation

ATTACKS = Path(__file__).resolve().parent / "import_attacks"
FAMILIES = ["compiled", "pkgutil_routes", "manual_spec", "finder_removed", "grader_modules", "other_folders"]
TRIALS = 4
# A module of each other folder of installed packages, where it has one: pure Python first.
_CANDIDATES = ("six.py", "idna/__init__.py", "certifi/__init__.py", "distro/__init__.py", "yaml/__init__.py")

HONEST = """
import math
import sys

import numpy as np
import torch
from torch.func import grad


def graph2(W_np, x_np, b_np):
    # every grader module the worker holds is in its view (course_view.WORKER_FILES)
    for name, module in list(sys.modules.items()):
        if name.startswith("grader") and getattr(module, "__file__", None):
            open(module.__file__, "rb").close()
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    # torch's own sympy: a vector-Jacobian product, and torch.func
    z = torch.tensor(W_np, requires_grad=True) * 2.0
    z.backward(torch.ones_like(z))
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    assert grad(lambda w: torch.sigmoid(w @ x + b).sum())(torch.tensor(W_np)).shape == W.shape
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    assert math.isfinite(float(s.sum()))
    return f, W.grad, (s * (1 - s)) @ x_np.T
"""
PLOTTING = """
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    plt.plot(s.ravel())
    plt.savefig("curve.png")
    plt.close("all")
    return f, W.grad, (s * (1 - s)) @ x_np.T
"""
UNDECLARED = """
import numpy as np
import torch
import yaml


def graph2(W_np, x_np, b_np):
    return None
"""


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _other_modules() -> list[str]:
    """A module in each folder of installed packages besides this environment's (the base interpreter's,
    the system's), where one of the candidates is there."""
    own = os.path.realpath(os.path.dirname(os.path.dirname(np.__file__)))
    found = []
    for folder in course_view.install_folders():
        if folder == own:
            continue
        for candidate in _CANDIDATES:
            if os.path.isfile(os.path.join(folder, candidate)):
                found.append(os.path.join(folder, candidate))
                break
    return found


def _attack(*families: str) -> str:
    parts = [(ATTACKS / "_header.py").read_text(), f"OTHER = {_other_modules()!r}\n"]
    parts += [(ATTACKS / f"{family}.py").read_text() for family in families]
    return "\n".join([*parts, (ATTACKS / "_graph2.py").read_text()])


def _grader(layer: str, *args: str | Path | int) -> subprocess.CompletedProcess[str]:
    return grader_run(*args, env=layer_env(layer))


# One plain interpreter imports what every attack's header imports first (numpy, torch: most of a start's
# cost), then runs each family in a child forked from it, its output in files of its own: each family as
# alone in a plain interpreter, without six starts of Python and torch.
_EACH_FAMILY = """
import os
import sys
import traceback

import numpy
import torch

for family in sys.argv[1:]:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        with open(family + ".out", "w") as out, open(family + ".err", "w") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
        try:
            with open(family + ".py") as script:
                exec(compile(script.read(), family + ".py", "exec"), {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            code = 1
        else:
            code = 0
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(family, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_each_route_reaches_its_package_without_the_sandbox(tmp_path: Path) -> None:
    """The attacks are real: in a plain interpreter every variant of every family gets its package."""
    for family in FAMILIES:
        script = _attack(family) + "\nprint('\\n'.join(REACHED))\n"
        (tmp_path / f"{family}.py").write_text(script, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-c", _EACH_FAMILY, *FAMILIES],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    codes = dict(line.split() for line in done.stdout.splitlines())
    assert list(codes) == FAMILIES, done.stdout
    for family in FAMILIES:
        stdout = (tmp_path / f"{family}.out").read_text(encoding="utf-8")
        stderr = (tmp_path / f"{family}.err").read_text(encoding="utf-8")
        assert codes[family] == "0", (family, stderr[-2000:])
        assert "HELD" not in stderr, (family, stderr[-2000:])
        assert stdout.strip(), family


@pytest.mark.parametrize("layer", _layers())
def test_no_route_reaches_an_undeclared_package_and_honest_handins_keep_full_marks(
    layer: str, tmp_path: Path
) -> None:
    exercises = tmp_path / "exercises"  # no course.yaml above: the stdlib, numpy and torch only
    copy_exercise(exercises / "graph2")
    submissions = tmp_path / "submissions"
    for family in FAMILIES:
        write_source(submissions / family / "graph2.py", _attack(family))
    write_source(submissions / "honest" / "graph2.py", textwrap.dedent(HONEST))
    done = _grader(layer, "run", exercises, "--submissions", submissions, "--trials", TRIALS, "--json")
    assert done.returncode in (0, 1), done.stderr[-3000:]
    results = {json.loads(line)["student"]: json.loads(line) for line in done.stdout.splitlines()}
    for student in [*FAMILIES, "honest"]:
        result = results[student]
        assert "REACHED" not in json.dumps(result), (student, result)
        assert result["error"] is None and result["score"] == result["max_score"], (student, result)
        assert "imports walled" in result["isolation"], result["isolation"]


@pytest.mark.parametrize("layer", _layers())
def test_grader_check_walls_every_route_at_once(layer: str, tmp_path: Path) -> None:
    exercise = copy_exercise(tmp_path / "exercises" / "graph2")
    handin = write_source(tmp_path / "attacker" / "graph2.py", _attack(*FAMILIES))
    done = _grader(layer, "check", exercise, handin, "--trials", TRIALS, "--json", "--show-output")
    result = json.loads(done.stdout)
    assert "REACHED" not in json.dumps(result), result
    assert result["error"] is None and result["score"] == result["max_score"], result


@pytest.mark.parametrize("layer", _layers())
def test_a_declared_package_works_and_an_undeclared_one_is_told_by_name(layer: str, tmp_path: Path) -> None:
    course = tmp_path / "course"
    course.mkdir()
    (course / "course.yaml").write_text("packages:\n  - matplotlib>=3.5\n", encoding="utf-8")
    exercise = copy_exercise(course / "graph2")
    plotting = write_source(tmp_path / "plotting" / "graph2.py", textwrap.dedent(PLOTTING))
    done = _grader(layer, "check", exercise, plotting, "--trials", TRIALS, "--json")
    result = json.loads(done.stdout)
    assert result["error"] is None and result["score"] == result["max_score"], result
    undeclared = write_source(tmp_path / "undeclared" / "graph2.py", textwrap.dedent(UNDECLARED))
    done = _grader(layer, "check", exercise, undeclared, "--trials", TRIALS, "--json")
    message = json.loads(done.stdout)["error"]["message"]
    assert "yaml" in message and "course.yaml" in message, message
    assert "site-packages" not in message and "/" not in message.replace("course.yaml", ""), message
    # matplotlib, installed and declared by CS231n's course but not by this one
    elsewhere = copy_exercise(tmp_path / "nocourse" / "graph2")
    done = _grader(layer, "check", elsewhere, plotting, "--trials", TRIALS, "--json")
    message = json.loads(done.stdout)["error"]["message"]
    assert "matplotlib" in message and "course.yaml" in message and "site-packages" not in message, message


def test_a_view_staged_by_two_threads_at_once_is_laid_out_once_and_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check lays out its workers' view ahead, in a thread, while a worker may ask for it (warm.py):
    both get the same complete skeleton, laid out once (the later one waits: staged twice at once, a
    check's first worker took 0.2 s to start, the two contending with the grader's other threads), and
    nothing half made is left beside it."""
    view = course_view.view_for((), torch=False)
    single = course_view.stage_skeleton(view, tmp_path / "alone")
    staged: list[str] = []
    make = tempfile.mkdtemp

    def counted(**where: str) -> str:
        staged.append(where["dir"])
        return make(**where)

    monkeypatch.setattr(tempfile, "mkdtemp", counted)
    with ThreadPoolExecutor(max_workers=4) as threads:
        made = list(threads.map(lambda _: course_view.stage_skeleton(view, tmp_path / "shared"), range(4)))
    assert len(set(made)) == 1 and made[0].name == view.digest
    assert len(staged) == 1
    assert [p.name for p in (tmp_path / "shared").iterdir()] == [view.digest]

    def layout(root: Path) -> list[tuple[str, bool]]:
        return sorted((str(p.relative_to(root)), p.is_dir()) for p in root.rglob("*"))

    assert layout(made[0]) == layout(single) and layout(single)
