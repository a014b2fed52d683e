"""Budgets per hand-in, not per process, and a decoder that never crashes (issue 30, family 3).

Each attack is a real hand-in, graded by the real `grader` command in a subprocess, in both isolation
layers where both work (bubblewrap, and the base layer: GRADER_ISOLATION=base), and checked from outside
through its --json output: the attacker gets its own error, with the numbers; every classmate graded
before and after it in the same warm slot (`-j 1`) gets full marks; the grader itself ends normally (exit
status 1: some hand-in failed), never killed or crashed (3).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, allow_subprocesses, copy_exercise, write_source

from grader.sandbox import cgroups, isolation
from grader.sandbox.reading import RETURNS_BUDGET_BYTES

TRIALS = 8


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    """A TMPDIR of the test's own (where the grader puts its slot folders), that a slot's uid may cross."""
    folder = Path(tempfile.mkdtemp(prefix="grader-budgets-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _environment(layer: str, tmp: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return env


def _grader(layer: str, *args: str, cwd: Path, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "grader", *args]
    return subprocess.run(
        command,
        cwd=cwd,
        env=_environment(layer, tmp),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _exercise(root: Path, memory_mb: int) -> Path:
    limits = "trial_seconds: 5, submission_seconds: 120, import_seconds: 60"
    limits = f"\nlimits: {{{limits}, memory_mb: {memory_mb}}}\n"
    allow_subprocesses(root / "exercises")  # the attackers' children: one budget for them all
    return copy_exercise(root / "exercises" / "graph2", append=limits)


def _run_class(
    layer: str, root: Path, attackers: dict[str, str], memory_mb: int, trials: int = TRIALS
) -> dict[str, dict[str, Any]]:
    """Each attacker between two correct classmates, graded as one `grader run -j 1` class: the results
    by student, after checking that every classmate got full marks and the grader ended normally."""
    return _graded_class(layer, root, attackers, memory_mb, trials)[0]


def _graded_class(
    layer: str, root: Path, attackers: dict[str, str], memory_mb: int, trials: int = TRIALS
) -> tuple[dict[str, dict[str, Any]], str]:
    """`_run_class`'s results, and the grader's stderr."""
    _exercise(root, memory_mb)
    submissions = root / "submissions"
    write_source(submissions / "a_first" / "hw.py", CORRECT_GRAPH2)
    for number, (name, source) in enumerate(attackers.items()):
        write_source(submissions / f"s{number:02d}a_{name}" / "hw.py", source)
        write_source(submissions / f"s{number:02d}b_classmate" / "hw.py", CORRECT_GRAPH2)
    done = _grader(
        layer, "run", str(root / "exercises"), "-j", "1", "--trials", str(trials), "--json", cwd=root
    )
    assert done.returncode == 1, done.stderr[-3000:]  # some hand-in failed; the grader was not killed
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert len(results) == 1 + 2 * len(attackers), done.stderr[-3000:]
    for student, result in results.items():
        if not student.startswith("s") or student.endswith("_classmate"):
            assert result["error"] is None, (student, result["error"])
            assert result["score"] == result["max_score"], (student, result["returns"])
    return {name: results[f"s{n:02d}a_{name}"] for n, name in enumerate(attackers)}, done.stderr


def _handin(body: str, prelude: str = "") -> str:
    """A graph2 hand-in computing the right values, which returns what `body` makes of them."""
    return (
        textwrap.dedent(prelude)
        + textwrap.dedent(
            """
        import numpy as np
        import torch


        def _right(W_np, x_np, b_np):
            W = torch.tensor(W_np, requires_grad=True)
            f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
            f.backward()
            s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
            return f, W.grad, (s * (1 - s)) @ x_np.T


        def graph2(W_np, x_np, b_np):
            f, auto_grad, user_grad = _right(W_np, x_np, b_np)
        """
        )
        + textwrap.indent(textwrap.dedent(body), "    ")
    )


# --- the grader holds at most RETURNS_BUDGET_BYTES of one hand-in's returns -------------------------

_SIXTY_MIB = 60 << 20

BIG_RETURNS = {
    # 60 MiB a trial, under the 64 MiB bound of one return: eight trials send 480 MiB
    "numpy60": f"return f, auto_grad, np.ones({_SIXTY_MIB // 8})",
    "torch60": f"return f, torch.ones({_SIXTY_MIB // 8}, dtype=torch.float64), user_grad",
    # three returns of 30 MiB each, 90 MiB a trial
    "three30": f"return np.ones({(30 << 20) // 8}), np.ones({(30 << 20) // 8}), np.ones({(30 << 20) // 8})",
}


@pytest.mark.parametrize("layer", _layers())
def test_returns_past_the_budget_are_that_handins_error_and_the_class_is_graded(
    layer: str, tmp_path: Path
) -> None:
    attackers = {name: _handin(body) for name, body in BIG_RETURNS.items()}
    found = _run_class(layer, tmp_path, attackers, memory_mb=1024)
    for name, result in found.items():
        error = result["error"]
        assert error is not None and error["kind"] == "memory", (name, error)
        message = error["message"]
        assert f"{RETURNS_BUDGET_BYTES >> 20} MiB the grader keeps" in message, message
        sent = int(message.split("the returns sent ", 1)[1].split(" MiB", 1)[0])
        assert RETURNS_BUDGET_BYTES >> 20 <= sent < (RETURNS_BUDGET_BYTES >> 20) + 128, message
        assert "return only the values asked for" in message


# --- returns read through the base class --------------------------------------------------------------

_LIARS = """
from torch.overrides import TorchFunctionMode


class LyingTensor(torch.Tensor):
    def numel(self):
        return 1

    def element_size(self):
        return 1

    @property
    def shape(self):
        return torch.Size([1])

    def size(self, *args):
        return torch.Size([1])

    def __len__(self):
        return 1

    @property
    def nbytes(self):
        return 8


class LyingArray(np.ndarray):
    @property
    def nbytes(self):
        return 8

    @property
    def size(self):
        return 1

    def __array__(self, *args, **kwargs):
        return np.zeros(1)

    def tobytes(self, *args, **kwargs):
        return b"\\0" * 8

    def astype(self, *args, **kwargs):
        return np.zeros(1)

    def __len__(self):
        return 1


class WrapperLiar(torch.Tensor):
    # A tensor of 4 entries with no data of its own, which hands out a big one when detached or aliased.
    @staticmethod
    def __new__(cls, n):
        return torch.Tensor._make_wrapper_subclass(cls, (n,), dtype=torch.float64)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if "detach" in str(func) or "alias" in str(func):
            return torch.zeros(BIG, dtype=torch.float64)
        return func(*args, **(kwargs or {}))


class LyingMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("numel", "element_size"):
            return 1
        return func(*args, **(kwargs or {}))
"""

_BIG = 25_000_000  # float64 entries: 190 MiB, three times the 64 MiB bound of one return

LYING_RETURNS = {
    "tensor_subclass": (
        f"return f, auto_grad, torch.zeros({_BIG}, dtype=torch.float64).as_subclass(LyingTensor)"
    ),
    "ndarray_subclass": f"return f, auto_grad, np.zeros({_BIG}).view(LyingArray)",
    # an exact torch.Tensor: its instance __dict__ takes precedence over the class's methods
    "tensor_attribute": f"""
        big = torch.zeros({_BIG}, dtype=torch.float64)
        big.numel = lambda: 1
        big.element_size = lambda: 1
        return f, auto_grad, big
    """,
    "dispatch_wrapper": "return f, auto_grad, WrapperLiar(4)",
    "function_mode": f"""
        with LyingMode():
            return f, auto_grad, torch.zeros({_BIG}, dtype=torch.float64)
    """,
}


@pytest.mark.parametrize("layer", _layers())
def test_lying_subclasses_are_measured_through_the_base_class(layer: str, tmp_path: Path) -> None:
    attackers = {
        name: _handin(body, prelude=f"import numpy as np\nimport torch\nBIG = {_BIG}\n" + _LIARS)
        for name, body in LYING_RETURNS.items()
    }
    # Three trials: each return is measured alone, and three of 190 MiB would be past the 256 MiB the
    # grader keeps of all of them, were they not measured (an error of the whole hand-in, not None)
    found = _run_class(layer, tmp_path, attackers, memory_mb=2048, trials=3)
    for name, result in found.items():
        assert result["error"] is None, (name, result["error"])
        user_grad = {r["name"]: r for r in result["returns"]}["user_grad"]
        assert user_grad["verdict"] == "error", (name, user_grad)
        message = user_grad["message"]
        assert f"of {_BIG} entries (190 MiB, more than the 64 MiB one return may be)" in message, (
            name,
            message,
        )
        named = {
            "tensor_subclass": "LyingTensor",
            "ndarray_subclass": "LyingArray",
            "dispatch_wrapper": "WrapperLiar",
        }
        if name in named:
            assert named[name] in message, message


# --- one memory budget for all of a hand-in's processes -----------------------------------------------

_FORKER = """
import os


def _children(count, megabytes, depth=1, parent_megabytes=0):
    # Each child (or grandchild, with depth 2) takes `megabytes` of memory it writes to, holds it while the
    # others do, then exits; the parent, which may take some too, waits for them all.
    pids = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                if depth > 1:  # its own child first, then its memory, held while the grandchild holds its own
                    os._exit(0 if _children(1, megabytes, depth - 1, parent_megabytes=megabytes) > 0 else 1)
                held = np.ones(megabytes << 17)
                time.sleep(2)
                os._exit(0 if held.sum() > 0 else 1)
            except BaseException:
                os._exit(1)
        pids.append(pid)
    held = np.ones(parent_megabytes << 17)
    for pid in pids:
        os.waitpid(pid, 0)
    return held.sum()
"""

_MEMORY_MB = 1536
# Each process alone stays under RLIMIT_AS (memory_mb of address space, of which torch's import maps 620
# MB): the children's sum is what passes the budget. 2.1, 2.0 and 1.8 GB against 1.5 GB.
FORKERS = {
    "three_children": "_children(3, 700)",
    "grandchildren": "_children(2, 500, depth=2)",
    "parent_and_children": "_children(2, 600, parent_megabytes=600)",
}


@pytest.mark.skipif(not cgroups.memory_available(), reason="no memory cgroup: memory is bounded per process")
@pytest.mark.parametrize("layer", _layers())
def test_the_memory_of_all_a_handins_processes_is_one_budget(layer: str, tmp_path: Path) -> None:
    attackers = {
        name: _handin(
            f"""
            global _done
            if not _done:
                _done = True
                {call}
            return f, auto_grad, user_grad
            """,
            prelude="import numpy as np\nimport time\n" + _FORKER + "\n_done = False\n",
        )
        for name, call in FORKERS.items()
    }
    found = _run_class(layer, tmp_path, attackers, memory_mb=_MEMORY_MB)
    for name, result in found.items():
        error = result["error"]
        assert error is not None and error["kind"] == "memory", (name, error, result["returns"])
        # at the first trial, whose call forked: the one whose results had not arrived when it was found
        assert f"needed more memory than the {_MEMORY_MB} MB allowed in trial 0" in error["message"], error
        assert {r["verdict"] for r in result["returns"]} == {"error"}, result["returns"]  # not graded
        assert "all its processes together" in error["message"], error


# --- forged frames on the result channel --------------------------------------------------------------

_FORGE = """
import json, os, struct


def _forge(head, payload=b"", declared=None):
    # Written to every descriptor: the result channel is one of them (stdout and stderr only print it).
    frame = struct.pack("<4sII", b"GRD1", len(head), len(payload) if declared is None else declared)
    frame += head + payload
    for fd in range(3, 64):
        try:
            os.write(fd, frame)
        except OSError:
            pass


def _arrays(*shapes):
    return json.dumps({"type": "trials", "arrays": [{"dtype": "float64", "shapes": list(shapes)}]}).encode()
"""

FORGERIES = {
    # 2**84 entries, one size zero: numpy raised ValueError in the grader's decoder (exit status 3)
    "shape_2_84": "_forge(_arrays([0, 1 << 28, 1 << 28, 1 << 28]))",
    "shape_huge": "_forge(_arrays([1 << 28, 1 << 28, 1 << 28]), b'\\\\0' * 8)",
    "deep_json": "_forge(b'{\"arrays\": ' + b'[' * 50000 + b']' * 50000 + b'}')",
    "huge_number": "_forge(b'{\"arrays\": [], \"type\": ' + b'9' * 50000 + b'}')",
    "not_utf8": "_forge(b'\\\\xff\\\\xfe{\"arrays\": []}')",
    "short_payload": "_forge(_arrays([4]), b'\\\\0' * 8)",
    "payload_too_big": "_forge(b'{}', declared=(1 << 32) - 1)",
}


ForgedClass = Callable[[str], tuple[dict[str, dict[str, Any]], str]]


@pytest.fixture(scope="module")
def forged_class(tmp_path_factory: pytest.TempPathFactory) -> ForgedClass:
    """Every forgery in one class run a layer (between correct classmates, `-j 1`), graded once when a test
    first asks for its layer: the results by forgery, and the grader's stderr. A class run of seven
    forgers costs one start of the grader, where a `grader check` each cost seven."""
    graded: dict[str, tuple[dict[str, dict[str, Any]], str]] = {}

    def run(layer: str) -> tuple[dict[str, dict[str, Any]], str]:
        if layer not in graded:
            attackers = {
                name: _handin(f"{FORGERIES[name]}\nreturn f, auto_grad, user_grad", prelude=_FORGE)
                for name in sorted(FORGERIES)
            }
            root = tmp_path_factory.mktemp(f"forged-{layer}")
            graded[layer] = _graded_class(layer, root, attackers, memory_mb=2048)
        return graded[layer]

    return run


@pytest.mark.parametrize("layer", _layers())
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_frames_are_a_protocol_error_not_a_crash(
    layer: str, forgery: str, forged_class: ForgedClass
) -> None:
    found, stderr = forged_class(layer)  # the grader ended normally: exit status 1, checked there
    assert "Traceback" not in stderr, stderr[-3000:]
    error = found[forgery]["error"]
    assert error is not None and error["kind"] == "protocol", error


@pytest.mark.parametrize("layer", _layers())
def test_a_forged_frame_is_a_protocol_error_of_grader_check(layer: str, tmp_path: Path) -> None:
    """`grader check` reads the same frames: the forgery that once crashed the decoder (exit status 3),
    checked alone, as a student checks a hand-in (every forgery is graded in the class runs above)."""
    _exercise(tmp_path, memory_mb=2048)
    source = _handin(f"{FORGERIES['shape_2_84']}\nreturn f, auto_grad, user_grad", prelude=_FORGE)
    path = write_source(tmp_path / "forger" / "hw.py", source)
    done = _grader(
        layer,
        "check",
        str(tmp_path / "exercises" / "graph2"),
        str(path),
        "--trials",
        "3",
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    error = json.loads(done.stdout)["error"]
    assert error is not None and error["kind"] == "protocol", error


# --- slot folders never outlive their grader ------------------------------------------------------------


def _slots(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("grader-slot-*"))


@pytest.mark.parametrize("layer", _layers())
def test_slot_folders_of_a_killed_grader_are_removed_by_the_next(
    layer: str, tmp_path: Path, private_tmp: Path
) -> None:
    _exercise(tmp_path, memory_mb=2048)
    slow = _handin("time.sleep(0.5)\nreturn f, auto_grad, user_grad", prelude="import time\n")
    for number in range(6):
        write_source(tmp_path / "submissions" / f"s{number}" / "hw.py", slow)
    command = [sys.executable, "-m", "grader", "run", str(tmp_path / "exercises"), "-j", "2", "--trials", "4"]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=_environment(layer, private_tmp),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        # Killed once a slot holds a hand-in: mid-class.
        while time.monotonic() < deadline and not any(
            any((slot / "submission").glob("*.py")) for slot in _slots(private_tmp)
        ):
            time.sleep(0.05)
        assert process.poll() is None, "the class was over before the grader could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    time.sleep(2)  # the zygotes see their grader gone and end
    assert any(any((slot / "submission").glob("*.py")) for slot in _slots(private_tmp))  # what is left
    write_source(tmp_path / "other" / "hw.py", CORRECT_GRAPH2)
    done = _grader(
        layer,
        "check",
        str(tmp_path / "exercises" / "graph2"),
        str(tmp_path / "other" / "hw.py"),
        "--trials",
        "2",
        "--json",
        cwd=tmp_path,
        tmp=private_tmp,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _slots(private_tmp) == []  # the dead grader's, and this one's own
