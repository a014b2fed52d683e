"""Real sandboxed runs: each submission below is graded once, in a real worker process, on few trials.

The exercise is a copy of graph2 with `limits: {trial_seconds: 1, first_call_seconds: 1}` so that timeouts
are quick.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, grade_source, write_exercise

from grader.exercise.spec import Exercise, load_exercise
from grader.judging.compare import Precision
from grader.outcomes import Location, Verdict
from grader.results import SubmissionResult
from grader.sandbox import isolation
from grader.sandbox.payload import ReturnedArray, ReturnProblem
from grader.sandbox.protocol import ProtocolError
from grader.sandbox.reading import _layout

TRIAL_SECONDS = 1


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sandbox")


@pytest.fixture(scope="module")
def fast(workdir: Path) -> Exercise:
    return load_exercise(
        copy_exercise(
            workdir / "graph2_fast",
            append=f"\nlimits: {{trial_seconds: {TRIAL_SECONDS}, first_call_seconds: {TRIAL_SECONDS}}}\n",
        )
    )


def verdicts(result: SubmissionResult) -> dict[str, Verdict]:
    return {r.name: r.verdict for r in result.returns}


def assert_trimmed(traceback: str, folder: Path) -> None:
    """A student's traceback names only their own file, relative: no grader code, no temp or home paths."""
    assert traceback
    for leak in (
        "grader/",
        "sandbox/worker",
        "site-packages",
        "numpy/",
        "importlib",
        tempfile.gettempdir(),
        "grader-",
        str(folder),
    ):
        assert leak not in traceback, f"{leak!r} leaks into the student's traceback:\n{traceback}"


# --- a correct submission -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def correct(fast: Exercise, workdir: Path) -> SubmissionResult:
    return grade_source(fast, workdir / "correct", "mine.py", CORRECT_GRAPH2, trials=20)


def test_correct_submission_passes(correct: SubmissionResult) -> None:
    result = correct
    assert result.error is None
    assert verdicts(result) == {"f": Verdict.PASS, "auto_grad": Verdict.PASS, "user_grad": Verdict.PASS}
    assert result.passed
    assert result.score == result.max_score == 10
    assert result.trials == 20
    # every return is judged on every trial (the autograd check runs 3 again in a worker of its own)
    assert {r.name: (r.trials, r.failed_trials) for r in result.returns} == {
        "f": (20, 0),
        "auto_grad": (20, 0),
        "user_grad": (20, 0),
    }
    assert result.isolation  # every result says how it was isolated
    assert result.stdout == "" and result.stderr == ""


# --- infinite loops -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loop(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        def graph2(W_np, x_np, b_np):
            while True:
                pass
    """
    return grade_source(fast, workdir / "loop", "loop.py", source, trials=2)


def test_infinite_loop_is_a_timeout_error(loop: SubmissionResult) -> None:
    result = loop
    assert result.error is not None
    assert result.error.kind == "timeout"
    assert f"{TRIAL_SECONDS} s" in result.error.message
    assert set(verdicts(result).values()) == {Verdict.ERROR}
    assert result.score == 0
    assert all(r.failed_trials == 2 for r in result.returns)
    assert "deadline" in result.returns[0].message


def test_infinite_loop_ends_at_its_cpu_deadline(loop: SubmissionResult) -> None:
    """Stopped at its deadline, counted in CPU (what the loop used, in the worker and again in the fresh
    worker that confirms it), not at some later cap: what happened, not how long the machine took."""
    result = loop
    assert result.error is not None
    used = [float(x) for x in re.findall(r"(\d+\.\d+) s (?:of CPU|in a fresh run)", result.error.message)]
    assert len(used) == 2, result.error.message
    assert all(TRIAL_SECONDS <= cpu <= TRIAL_SECONDS + 1.0 for cpu in used), result.error.message


@pytest.fixture(scope="module")
def stubborn(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import time


        def graph2(W_np, x_np, b_np):
            while True:
                try:
                    time.sleep(10)
                except BaseException:
                    pass
    """
    return grade_source(fast, workdir / "stubborn", "stubborn.py", source, trials=3)


def test_loop_that_swallows_the_deadline_is_killed(stubborn: SubmissionResult) -> None:
    result = stubborn
    assert result.error is not None
    assert result.error.kind == "timeout"
    assert result.error.trial == 0
    assert "wall-clock cap" in result.error.message and "did not stop when asked" in result.error.message
    assert set(verdicts(result).values()) == {Verdict.ERROR}


# --- exceptions and exits -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exception(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import numpy as np


        def helper(W):
            return np.linalg.inv(np.zeros((2, 2)))


        def graph2(W_np, x_np, b_np):
            return helper(W_np)
    """
    return grade_source(fast, workdir / "exception", "raises.py", source, trials=3)


def test_exception_is_an_error_with_the_students_traceback(
    exception: SubmissionResult, workdir: Path
) -> None:
    error = exception.error
    assert error is not None
    assert error.kind == "exception"
    assert "LinAlgError" in error.message and "Singular matrix" in error.message
    assert 'File "raises.py", line 9, in graph2' in error.traceback
    assert 'File "raises.py", line 5, in helper' in error.traceback
    assert error.location == Location("raises.py", 5, "helper")  # the innermost, as fields
    assert "np.linalg.inv(np.zeros((2, 2)))" in error.traceback
    assert_trimmed(error.traceback, workdir)
    assert set(verdicts(exception).values()) == {Verdict.ERROR}
    # each return's message says where it went wrong in the student's file
    assert "raises.py line 5" in exception.returns[0].message


@pytest.fixture(scope="module")
def exits(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import sys


        def graph2(W_np, x_np, b_np):
            sys.exit(4)
    """
    return grade_source(fast, workdir / "exits", "quits.py", source, trials=3)


def test_sys_exit_in_a_call_is_an_error(exits: SubmissionResult, workdir: Path) -> None:
    error = exits.error
    assert error is not None
    assert error.kind == "exit"
    assert "SystemExit" in error.message and "4" in error.message
    assert 'File "quits.py", line 5, in graph2' in error.traceback
    assert_trimmed(error.traceback, workdir)
    assert set(verdicts(exits).values()) == {Verdict.ERROR}
    # every trial was still run and reported, for every return
    assert {r.name: (r.trials, r.failed_trials) for r in exits.returns} == {
        "f": (3, 3),
        "auto_grad": (3, 3),
        "user_grad": (3, 3),
    }


@pytest.fixture(scope="module")
def import_error(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import numpy as np


        def setup():
            return {}["missing"]


        TABLE = setup()


        def graph2(W_np, x_np, b_np):
            return 0
    """
    return grade_source(fast, workdir / "import_error", "top.py", source, trials=3)


def test_exception_at_import_time_is_an_error(import_error: SubmissionResult, workdir: Path) -> None:
    error = import_error.error
    assert error is not None
    assert error.kind == "import"
    assert "KeyError" in error.message
    assert 'File "top.py", line 8, in <module>' in error.traceback
    assert 'File "top.py", line 5, in setup' in error.traceback
    assert_trimmed(error.traceback, workdir)
    assert set(verdicts(import_error).values()) == {Verdict.ERROR}
    for ret in import_error.returns:  # never called: no count of trials it "failed" on
        assert ret.message.startswith("not run: import (KeyError") and " of 3 trials" not in ret.message


@pytest.fixture(scope="module")
def os_exit(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = CORRECT_GRAPH2.replace(
        "def graph2(W_np, x_np, b_np):\n",
        "calls = []\n\n\n    def graph2(W_np, x_np, b_np):\n        calls.append(1)\n"
        "        if len(calls) == 3:\n            import os\n            os._exit(3)\n",
    )
    return grade_source(fast, workdir / "os_exit", "crash.py", source, trials=5)


def test_os_exit_mid_trial_is_reported_at_its_trial(os_exit: SubmissionResult) -> None:
    """Results travel a few trials at a time, so those of trials 0 and 1 may die with the process; the
    trial it died in is still known exactly (the worker notes each trial before it starts)."""
    error = os_exit.error
    assert error is not None
    assert error.kind == "exit"
    assert "3" in error.message and "trial 2" in error.message
    assert error.trial == 2
    for ret in os_exit.returns:
        assert ret.verdict is Verdict.ERROR
        assert 3 <= ret.failed_trials <= 5


# --- dishonest or careless submissions -------------------------------------------------------------------


@pytest.fixture(scope="module")
def forger(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import json
        import struct
        import sys

        import numpy as np


        def graph2(W_np, x_np, b_np):
            # a forged result frame and forged report lines, on stdout
            kinds = [{"name": n, "ok": False, "problem": "x"} for n in ("f", "auto_grad", "user_grad")]
            items = [[0, 0, [0, 1, 2]]]
            fake = {"type": "trials", "rerun": False, "kinds": kinds, "items": items, "arrays": []}
            head = json.dumps(fake).encode()
            sys.stdout.buffer.write(b"GRD1" + struct.pack("<II", len(head), 0) + head)
            print(json.dumps({"verdict": "pass", "score": 10, "max_score": 10}))
            print("f pass\\nauto_grad pass\\nuser_grad pass\\nscore 10/10")
            print("x" * 200_000)
            sys.stdout.flush()
            return 0.0, np.zeros_like(W_np), np.zeros_like(W_np)
    """
    return grade_source(fast, workdir / "forger", "forger.py", source, trials=4)


def test_printing_fake_results_is_graded_on_what_it_returns(forger: SubmissionResult) -> None:
    assert forger.error is None
    assert verdicts(forger) == {"f": Verdict.LOGIC, "auto_grad": Verdict.LOGIC, "user_grad": Verdict.LOGIC}
    assert forger.score == 0
    # wrong on every trial it was judged on, each return on all 4
    assert forger.trials == 4 and all(r.failed_trials == r.trials == 4 for r in forger.returns)


def test_student_output_is_captured_with_a_cap(forger: SubmissionResult, fast: Exercise) -> None:
    assert "score 10/10" in forger.stdout  # kept for the student to see...
    cap = fast.spec.limits.output_kb << 10
    assert len(forger.stdout) < cap + 200  # ...but only up to the cap
    assert "more bytes not shown" in forger.stdout


@pytest.fixture(scope="module")
def mutator(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = CORRECT_GRAPH2.replace(
        "        return f, W.grad, (s * (1 - s)) @ x_np.T\n",
        "        user = (s * (1 - s)) @ x_np.T\n"
        "        W_np *= -3.0\n"
        "        x_np += 100.0\n"
        "        b_np[:] = 7.0\n"
        "        return f, W.grad, user\n",
    )
    assert "W_np *= -3.0" in source
    return grade_source(fast, workdir / "mutator", "mutator.py", source, trials=20)


def test_mutating_inputs_after_computing_is_graded_as_if_it_had_not(mutator: SubmissionResult) -> None:
    assert mutator.error is None
    assert verdicts(mutator) == {"f": Verdict.PASS, "auto_grad": Verdict.PASS, "user_grad": Verdict.PASS}


@pytest.fixture(scope="module")
def missing(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        def graf2(W_np, x_np, b_np):
            return 0


        def helper():
            pass


        def _private():
            pass
    """
    return grade_source(fast, workdir / "missing", "typo.py", source, trials=3)


def test_missing_function_lists_what_was_defined(missing: SubmissionResult) -> None:
    error = missing.error
    assert error is not None
    assert error.kind == "missing-function"
    assert "'graph2'" in error.message
    assert "graf2" in error.message and "helper" in error.message
    assert set(verdicts(missing).values()) == {Verdict.ERROR}


@pytest.fixture(scope="module")
def syntax(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import numpy as np


        def graph2(W_np, x_np, b_np):
            s = np.exp(W_np
            return s
    """
    return grade_source(fast, workdir / "syntax", "broken.py", source, trials=3)


def test_syntax_error_names_the_line(syntax: SubmissionResult) -> None:
    error = syntax.error
    assert error is not None
    assert error.kind == "import"
    assert "SyntaxError" in error.message
    assert "line 5" in error.message
    assert 'File "broken.py", line 5' in error.traceback
    assert set(verdicts(syntax).values()) == {Verdict.ERROR}


def test_syntax_error_message_has_no_temp_paths(syntax: SubmissionResult, workdir: Path) -> None:
    assert syntax.error is not None
    assert_trimmed(syntax.error.message, workdir)
    for ret in syntax.returns:
        assert_trimmed(ret.message, workdir)


@pytest.fixture(scope="module")
def bad_returns(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import torch


        def graph2(W_np, x_np, b_np):
            W = torch.tensor(W_np, requires_grad=True)
            f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
            return f, "the gradient", None
    """
    return grade_source(fast, workdir / "bad_returns", "types.py", source, trials=3)


def test_unusable_return_values_are_errors_per_return(bad_returns: SubmissionResult) -> None:
    assert bad_returns.error is None
    assert verdicts(bad_returns) == {
        "f": Verdict.PASS,
        "auto_grad": Verdict.ERROR,
        "user_grad": Verdict.ERROR,
    }
    by_name = {r.name: r for r in bad_returns.returns}
    assert "str" in by_name["auto_grad"].message
    assert "None" in by_name["user_grad"].message


@pytest.fixture(scope="module")
def patchy(fast: Exercise, workdir: Path) -> SubmissionResult:
    # Results travel return by return, in runs of one dtype: here a return that is missing on some trials
    # and changes its dtype on others, beside returns that do neither.
    source = """
        import numpy as np
        import torch


        def graph2(W_np, x_np, b_np):
            W = torch.tensor(W_np, requires_grad=True)
            f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
            f.backward()
            s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
            rows = W_np.shape[0]
            gradient = W.grad.float() if rows % 3 == 0 else W.grad
            return (None if rows % 2 else f), gradient, (s * (1 - s)) @ x_np.T
    """
    return grade_source(fast, workdir / "patchy", "patchy.py", source, trials=60)


def test_each_trials_returns_are_its_own_when_some_are_missing(patchy: SubmissionResult) -> None:
    assert patchy.error is None
    by_name = {r.name: r for r in patchy.returns}
    assert by_name["auto_grad"].verdict is Verdict.PASS and by_name["user_grad"].verdict is Verdict.PASS
    assert by_name["f"].verdict is Verdict.ERROR and "None" in by_name["f"].message
    assert 0 < by_name["f"].failed_trials < patchy.trials  # only the trials of an odd number of rows


@pytest.fixture(scope="module")
def float32(graph2: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import numpy as np
        import torch


        def graph2(W_np, x_np, b_np):
            W = torch.tensor(W_np, dtype=torch.float32, requires_grad=True)
            x = torch.tensor(x_np, dtype=torch.float32)
            b = torch.tensor(b_np, dtype=torch.float32)
            f = torch.sum(torch.sigmoid(W @ x + b))
            f.backward()
            W32, x32, b32 = (a.astype(np.float32) for a in (W_np, x_np, b_np))
            s = 1 / (1 + np.exp(-(W32 @ x32 + b32)))
            return f, W.grad, (s * (1 - s)) @ x32.T
    """
    # acceptance: never `logic` over 5000 trials (the course's np.allclose loop fails it often)
    return grade_source(graph2, workdir / "float32", "single.py", source, trials=5000)


def test_correct_float32_work_is_never_logic(float32: SubmissionResult) -> None:
    assert float32.error is None
    for ret in float32.returns:
        assert ret.verdict in (Verdict.PASS, Verdict.PRECISION), (ret.name, ret.message)
        assert ret.precision is Precision.FLOAT32


# --- what the student's function receives ----------------------------------------------------------------


@pytest.fixture(scope="module")
def received(workdir: Path) -> SubmissionResult:
    """A submission that reports, through its returns, what it was handed."""
    exercise = load_exercise(
        write_exercise(
            workdir / "probe",
            """
        id: probe
        title: what arrives
        entry: probe
        args: [a, k, lam]
        sizes:
          n: {min: 1, max: 4}
        inputs:
          a: {shape: [n], dist: normal}
          k: {shape: [n], dist: integer, low: 0, high: 3}
          lam: {shape: [], dist: constant, value: 0.5}
        graph: |
          y = a * lam + k
        returns:
          - {name: y, value: y}
          - {name: types_ok, value: y}
          - {name: scalar_ok, value: y}
        solution: null
        starter: null
    """,
        )
    )
    source = """
        import numpy as np

        seen = []


        def probe(a, k, lam):
            y = a * lam + k
            types_ok = (
                type(a) is np.ndarray and type(k) is np.ndarray and isinstance(lam, np.ndarray)
                and a.dtype == np.float64 and k.dtype == np.int64 and lam.dtype == np.float64
                and a.flags.writeable and k.flags.writeable
                and all(a is not old for old in seen)
            )
            seen.append(a)
            a[:] = 1e9  # must not leak into the reference, nor into the next call
            return y, y + (0 if types_ok else 1000), y + (0 if np.ndim(lam) == 0 else 1000)
    """
    return grade_source(exercise, workdir / "probe_sub", "probe.py", source, trials=10)


def test_inputs_arrive_as_fresh_writeable_numpy_arrays(received: SubmissionResult) -> None:
    assert received.error is None
    by_name = {r.name: r for r in received.returns}
    assert by_name["y"].verdict is Verdict.PASS
    assert by_name["types_ok"].verdict is Verdict.PASS


def test_scalar_inputs_arrive_as_0d_arrays(received: SubmissionResult) -> None:
    by_name = {r.name: r for r in received.returns}
    assert by_name["scalar_ok"].verdict is Verdict.PASS


@pytest.fixture(scope="module")
def big_endian(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = CORRECT_GRAPH2.replace("(s * (1 - s)) @ x_np.T", '((s * (1 - s)) @ x_np.T).astype(">f8")')
    assert '">f8"' in source
    return grade_source(fast, workdir / "big_endian", "swapped.py", source, trials=3)


def test_big_endian_float64_return_is_accepted(big_endian: SubmissionResult) -> None:
    assert verdicts(big_endian)["user_grad"] is Verdict.PASS


# --- resources ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hog(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = """
        import numpy as np


        def graph2(W_np, x_np, b_np):
            big = np.ones(10**10)  # 80 GB
            return big.sum(), W_np, W_np
    """
    return grade_source(fast, workdir / "hog", "hog.py", source, trials=2)


def test_huge_allocation_is_an_error_in_plain_words(hog: SubmissionResult) -> None:
    error = hog.error
    assert error is not None
    assert error.kind == "memory"
    assert "more memory than the" in error.message and "MB allowed" in error.message
    assert set(verdicts(hog).values()) == {Verdict.ERROR}


# Sleep lengths no other process on the machine uses: how the test finds what a submission started.
LINGER_CHILD, LINGER_DAEMON = "613.25", "613.5"


@pytest.fixture(scope="module")
def spawner(fast: Exercise, workdir: Path) -> SubmissionResult:
    source = f"""
        import os
        import subprocess

        import numpy as np


        def graph2(W_np, x_np, b_np):
            subprocess.Popen(["sleep", "{LINGER_CHILD}"])
            subprocess.Popen(["sleep", "{LINGER_DAEMON}"], start_new_session=True)  # escapes its session
            return 0.0, np.zeros_like(W_np), np.zeros_like(W_np)
    """
    return grade_source(fast, workdir / "spawner", "spawner.py", source, trials=1)


def _lingering(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (cmdline.parent / "status").read_text()
        except OSError:
            continue  # gone meanwhile
        dead = any(line.startswith("State:") and ("Z" in line or "X" in line) for line in state.splitlines())
        if marker in text and "sleep" in text and not dead:
            found.append(f"{cmdline.parent.name}: {text.strip()}")
    return found


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
def test_no_process_is_left_behind(spawner: SubmissionResult) -> None:
    """The process group dies with the run; with bubblewrap or a cgroup, even a daemon in its own session."""
    current = isolation.current()
    ends_daemons = current.level == "bubblewrap" or current.process_limit is isolation.ProcessLimit.CGROUP
    markers = [LINGER_CHILD, LINGER_DAEMON] if ends_daemons else [LINGER_CHILD]
    deadline = time.monotonic() + 30  # ends as soon as they are gone: the margin is for a loaded machine
    while any(_lingering(m) for m in markers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for m in markers for p in _lingering(m)]
    assert not left, f"processes left behind under {spawner.isolation}: {left}"
    for pid in (line.split(":")[0] for line in _lingering(LINGER_DAEMON)):  # tidy up after reduced isolation
        with contextlib.suppress(OSError):
            os.kill(int(pid), 9)


def test_a_trial_with_unknown_or_misnamed_returns_is_refused() -> None:
    """A trial of a results frame names its frame's descriptions of its returns, in the exercise's order."""
    kinds: list[ReturnedArray | ReturnProblem] = [
        ReturnedArray(name="f", ok=True, dtype="float64", source="torch.Tensor"),
        ReturnProblem(name="g", ok=False, problem="returned None"),
    ]
    layout = _layout(kinds, (0, 1), ("f", "g"))
    assert layout[0] == kinds[0] and layout[1] == ReturnProblem(name="g", ok=False, problem="returned None")
    with pytest.raises(ProtocolError, match="named"):
        _layout(kinds, (1, 0), ("f", "g"))
    with pytest.raises(ProtocolError, match="kind 2"):
        _layout(kinds, (0, 2), ("f", "g"))
