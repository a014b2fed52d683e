"""Shared fixtures: paths to the bundled exercises, copies of them to break, submissions, the real CLI.

Every sandboxed grading starts a Python process that imports torch (~1.5 s), so tests that grade share
their results through module-scoped fixtures and use small trial counts where the count does not matter.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

import grader.exercise.reference_cache as reference_cache_module
from grader.exercise.settings import CACHE_ENV, Settings
from grader.exercise.spec import SPEC_FILE, Exercise, discover_exercises, load_exercise
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.results import SubmissionResult

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
GRAPH2 = EXERCISES / "mac0460" / "graph2"


@pytest.fixture(scope="session", autouse=True)
def reference_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """References are cached in this session's own folder (the CLI's subprocesses inherit it): never in
    the user's ~/.cache, and never from an earlier session's run of other code."""
    folder = tmp_path_factory.mktemp("reference-cache")
    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    yield folder
    if previous is None:
        del os.environ[CACHE_ENV]
    else:
        os.environ[CACHE_ENV] = previous


@pytest.fixture(autouse=True)
def trusted_cache() -> Iterator[None]:
    """A test that calls the Python API (grader.check, grader.grade) marks this pytest process untrusted
    for the reference cache, as a notebook's kernel is; the next test starts as the CLI does."""
    yield
    reference_cache_module._trusted = True
    reference_cache_module._OWN.clear()


def library() -> dict[str, Path]:
    """The bundled exercises' folders by id (the library is grouped by course: exercises/cs231n/a2/...)."""
    folders = discover_exercises(EXERCISES)
    return {_spec_id(folder): folder for folder in folders}


def _spec_id(folder: Path) -> str:
    for line in (folder / SPEC_FILE).read_text(encoding="utf-8").splitlines():
        if line.startswith("id:"):
            return line.removeprefix("id:").strip()
    raise AssertionError(f"{folder / SPEC_FILE} has no id line")


def exercise_folder(exercise_id: str) -> Path:
    return library()[exercise_id]


# Array-building examples can be slow on their first call (numpy/torch warm-up): no per-example deadline.
settings.register_profile("grader", deadline=None, max_examples=60)
settings.load_profile("grader")

CORRECT_GRAPH2 = """
    import numpy as np
    import torch


    def graph2(W_np, x_np, b_np):
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        f.backward()
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        return f, W.grad, (s * (1 - s)) @ x_np.T
"""

TRANSPOSED_GRAPH2 = """
    import numpy as np
    import torch


    def graph2(W_np, x_np, b_np):
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        f.backward()
        s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
        return f, W.grad, x_np @ (s * (1 - s)).T
"""


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line of `text` containing `needle`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} is not in the text")


def copy_exercise(
    target: Path, edits: Sequence[tuple[str, str]] = (), source: Path = GRAPH2, append: str = ""
) -> Path:
    """Copy an exercise folder to `target` and apply textual edits to its exercise.yaml.

    Each edit must apply, so a change in the template shows up as a clear failure, not a silent no-op.
    """
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    for shared in _shared_support(source):  # a course's helpers beside the exercise go beside the copy
        destination = target.parent / shared.relative_to(source.parent)
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            copy = shutil.copytree if shared.is_dir() else shutil.copyfile
            copy(shared, destination)
    spec = target / "exercise.yaml"
    text = spec.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, f"template {source / 'exercise.yaml'} no longer contains {old!r}"
        text = text.replace(old, new, 1)
    spec.write_text(text + append, encoding="utf-8")
    return target


def _shared_support(folder: Path) -> list[Path]:
    data = yaml.safe_load((folder / SPEC_FILE).read_text(encoding="utf-8"))
    entries = data.get("support", []) if isinstance(data, dict) else []
    return [(folder / e).resolve() for e in entries if isinstance(e, str) and e.startswith("../")]


def without_top_level_block(text: str, key: str) -> str:
    """YAML `text` without its top-level block `key:` (that line and the indented lines below it)."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if line.startswith(f"{key}:"):
            skipping = True
            continue
        if skipping and line.strip() and not line.startswith((" ", "-")):
            skipping = False
        if not skipping:
            kept.append(line)
    return "".join(kept)


def allow_subprocesses(folder: Path) -> Path:
    """A course.yaml in `folder` that lets the hand-ins of the exercises below it start processes (one
    process per hand-in otherwise): where the defences that must hold with children are tested."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.yaml").write_text("subprocesses: true\n", encoding="utf-8")
    return folder


def write_exercise(folder: Path, spec: str, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "exercise.yaml").write_text(textwrap.dedent(spec).lstrip(), encoding="utf-8")
    for name, source in (files or {}).items():
        (folder / name).write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return folder


def write_source(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def grade_source(
    exercise: Exercise, folder: Path, name: str, source: str, trials: int = 10, seed: int = 0
) -> SubmissionResult:
    """Write `source` as `folder/name` and grade it in the real sandbox."""
    path = write_source(folder / name, source)
    return grade(exercise, submission_from_path(path, exercise.spec.entry), Settings(seed, trials))


@pytest.fixture(scope="session")
def graph2() -> Exercise:
    return load_exercise(GRAPH2)


@pytest.fixture(scope="session")
def ce_exercise(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    """A second exercise using the rest of the spec: two sizes, integer labels with size-dependent bounds,
    a normal and a constant input, softmax / log_softmax, integer-tensor indexing and a vjp return."""
    folder = write_exercise(
        tmp_path_factory.mktemp("ce") / "ce",
        """
        id: ce
        title: Softmax cross-entropy with weight decay
        entry: ce
        args: [X, labels, W, G, lam]
        sizes:
          n: {min: 1, max: 6}
          c: {min: 2, max: 5}
        inputs:
          X: {shape: [n, c], dist: normal}
          labels: {shape: [n], dist: integer, low: 0, high: c - 1}
          W: {shape: [c, c], dist: uniform, low: -1, high: 1}
          G: {shape: [n, c], dist: normal, mean: 1.0, std: 0.5}
          lam: {dist: constant, value: 0.25}
        graph: |
          Z = X @ W
          P = softmax(Z, dim=1)
          logp = log_softmax(Z, dim=1)
          loss = -mean(logp[arange(n), labels]) + lam * sum(W * W)
          H = relu(Z) * 2
        returns:
          - {name: loss, value: loss}
          - {name: dW, grad: {of: loss, wrt: W}}
          - {name: dX, vjp: {of: H, wrt: X, upstream: G}}
          - {name: P, value: P}
        trials: 20
        solution: null
        starter: null
        """,
    )
    return load_exercise(folder)


def grader_command() -> list[str]:
    """The installed `grader` console script of this interpreter's environment (or `python -m grader`)."""
    script = Path(sys.executable).parent / "grader"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "grader"]


def grader_in_background(
    args: Sequence[str | Path], cwd: Path, ready: Callable[[], bool], timeout: float
) -> subprocess.Popen[str]:
    """The real `grader` in its own session (a process group to signal), returned once `ready()` holds
    or `timeout` seconds have passed."""
    process = subprocess.Popen(
        [*grader_command(), *map(str, args)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # Ctrl-C as at a terminal: a process started in the background of a script inherits SIGINT
        # ignored (and Python then keeps it so), as this test's own runner may have been.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not ready():
        time.sleep(0.05)
    return process


def layer_env(layer: str) -> dict[str, str]:
    """This environment for a grader under `layer` ("bubblewrap" or "base"), no other GRADER_ setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    return env


def grader_run(
    *args: str | Path | int, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The real `grader` run to its end, its output captured (stdin closed: nothing waits on a prompt)."""
    return subprocess.run(
        [*grader_command(), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="session")
def run_grader() -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str | Path, cwd: Path = ROOT, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return grader_run(*args, cwd=cwd, timeout=timeout)

    return run


def handins(count: int) -> str:
    """How `grader run`'s summary counts hand-ins: "1 hand-in", "3 hand-ins"."""
    return f"{count} hand-in" if count == 1 else f"{count} hand-ins"


# Each file's share of the suite, in seconds summed over its tests (`--durations=0` on a quiet 2-core
# machine, two processes, 2026-12-05; test_provenance_attacks.py's after its first call's deadline fell
# to 4 s: about 1714 s in all). xdist's loadfile hands files out in collection order (.ci/run turns its
# own reordering, by test count, off): the longest go first, so that neither process is left alone at
# the end with a long file while the other is idle.
_FILE_SECONDS = {
    "test_deadlines.py": 111,
    "test_one_process.py": 107,
    "test_cases.py": 102,
    "test_leftovers.py": 98,
    "test_budgets.py": 85,
    "test_distribution.py": 77,
    "test_secret_seed.py": 70,
    "test_forgery.py": 69,
    "test_cli.py": 69,
    "test_provenance_attacks.py": 66,
    "test_attacks.py": 62,
    "test_corpus.py": 56,
    "test_sinking.py": 45,
    "test_cluster.py": 43,
    "test_classrun.py": 36,
    "test_killed_grader.py": 35,
    "test_provenance.py": 33,
    "test_course_bugs.py": 30,
    "test_prepare.py": 28,
    "test_randomness.py": 28,
    "test_misconceptions.py": 27,
    "test_battery.py": 25,
    "test_import_walls.py": 24,
    "test_student_words.py": 23,
    "test_gradescope.py": 23,
    "test_torch_walls.py": 19,
    "test_zygote_references.py": 18,
    "test_isolation.py": 17,
    "test_backward_slips.py": 17,
    "test_warm.py": 17,
    "test_sandbox.py": 17,
    "test_course_env.py": 15,
    "test_numerical_derivatives.py": 14,
    "test_reference_cache.py": 14,
    "test_conventions.py": 13,
    "test_file_choice.py": 12,
    "test_linear_classifiers.py": 11,
    "test_lms.py": 10,
}
# A file of this share or more is `slow`: `-m "not slow"` leaves those out (83% of the tests' time) for
# the quick part while developing (README, Development).
SLOW_SECONDS = 20


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (the sort is stable: each file's tests keep their order), marked slow."""
    items.sort(key=lambda item: -_FILE_SECONDS.get(item.path.name, 0))
    for item in items:
        if _FILE_SECONDS.get(item.path.name, 0) >= SLOW_SECONDS:
            item.add_marker(pytest.mark.slow)
