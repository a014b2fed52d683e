"""`grader.check(...)` in a real Jupyter kernel, the Python API outside one, and both against the CLI.

One notebook runs in one kernel (of this environment's Python) and checks, as a student would, a graph2
with the hand-derived gradient transposed, a correct graph2, and a forward and backward of CS231n's affine
layer whose db is averaged; the CLI grades the same code written to files, meanwhile, and every return's
verdict, score and smallest failing case must be the same.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from conftest import EXERCISES, GRAPH2, ROOT, grader_command
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

import grader
from grader.errors import UsageError
from grader.exercise.spec import EXERCISES_ENV
from grader.outcomes import FailureKind, IsolationLevel, Verdict

AFFINE = EXERCISES / "cs231n" / "a2" / "affine"
TRIALS = 20
# What the notebook checks: (exercise, code as the student's cell holds it, the check's arguments).
CHECKS = {
    "transposed": (GRAPH2, (GRAPH2 / "wrong" / "transpose.py").read_text(), "graph2"),
    "correct": (GRAPH2, (GRAPH2 / "solution.py").read_text(), "graph2"),
    "affine": (AFFINE, (AFFINE / "wrong" / "db_mean.py").read_text(), "affine_forward, affine_backward"),
}
KERNEL = "grader-test-venv"


def _kernel(folder: Path) -> KernelManager:
    """A kernel of this environment's Python, whatever kernels the machine has installed."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": KERNEL, "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return KernelManager(
        kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(folder / "kernels")])
    )


def _notebook() -> Any:
    cell: Callable[[str], Any] = nbformat.v4.new_code_cell  # untyped in nbformat
    cells = [cell("import json, random\nimport numpy as np, torch\nimport grader")]
    for name, (exercise, code, functions) in CHECKS.items():
        cells.append(cell(code))
        cells.append(
            cell(
                textwrap.dedent(f"""
                random.seed(1); np.random.seed(1); torch.manual_seed(1)
                drawn = (random.random(), np.random.rand(), torch.rand(1).item())
                random.seed(1); np.random.seed(1); torch.manual_seed(1)
                {name} = grader.check({str(exercise)!r}, {functions}, trials={TRIALS})
                again = (random.random(), np.random.rand(), torch.rand(1).item())
                from grader.report.json_report import to_json_line
                found = json.loads(to_json_line({name}.result))
                print(json.dumps({{"json": found, "rng kept": drawn == again}}))
                """).strip()
            )
        )
        cells.append(cell(name))  # displayed, as a cell's last expression is
    cells.append(cell("def sigmoid(z):\n    return 1 / (1 + np.exp(-z)) @ z"))  # a helper's mistake
    cells.append(
        cell(
            "def graph2(W_np, x_np, b_np):\n    return sigmoid(W_np @ x_np + b_np).sum(), W_np, W_np\n"
            f"failing = grader.check({str(GRAPH2)!r}, graph2, trials=2)\n"
            "print(failing.result.first_trial_error.traceback)"
        )
    )
    # The course's exercises, as a course sets them for its students: ids are looked up there.
    misspelt = cell(
        f"import os\nos.environ[{EXERCISES_ENV!r}] = {str(EXERCISES)!r}\n"
        "grader.check('graph9', graph2, trials=2)"
    )
    misspelt.metadata["tags"] = ["raises-exception"]  # nbclient runs on past the error it expects
    cells.append(misspelt)
    notebook: Callable[..., Any] = nbformat.v4.new_notebook
    return notebook(cells=cells)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per check: what its cells printed and displayed in the kernel, and the CLI's JSON on the same code."""
    folder = tmp_path_factory.mktemp("notebook")
    cli = {}
    for name, (exercise, code, _) in CHECKS.items():  # the CLI meanwhile: the kernel mostly waits
        path = folder / f"{name}.py"
        path.write_text(code)
        command = [*grader_command(), "check", str(exercise), str(path), "--json", "--trials", str(TRIALS)]
        cli[name] = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    notebook = _notebook()
    client = NotebookClient(
        notebook, km=_kernel(folder), timeout=120, resources={"metadata": {"path": str(folder)}}
    )
    client.execute()
    found: dict[str, Any] = {}
    cells = iter(notebook.cells[1:])
    for name in CHECKS:
        next(cells)
        printed = "".join(o["text"] for o in next(cells).outputs if o["output_type"] == "stream")
        shown = next(o for o in next(cells).outputs if o["output_type"] == "execute_result")
        stdout, _ = cli[name].communicate(timeout=120)
        found[name] = {"kernel": json.loads(printed), "shown": shown["data"], "cli": json.loads(stdout)}
    next(cells)
    found["traceback"] = "".join(o["text"] for o in next(cells).outputs if o["output_type"] == "stream")
    found["misspelt"] = next(o for o in next(cells).outputs if o["output_type"] == "error")
    return found


def _verdicts(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Per return, what the student is told: verdict, score and mistake. Not the figures over the trials
    judged (failing trials, the message's largest error, the smallest failing case): each grading checks
    3 trials of its own against autograd (judging/provenance.py), on which only the returns derived by
    hand are judged, so two gradings judge the others on different trials."""
    return [(r["name"], r["verdict"], r["score"], r["misconception"]) for r in result["returns"]]


@pytest.mark.parametrize("name", list(CHECKS))
def test_a_notebook_check_gives_the_clis_verdicts(executed: dict[str, Any], name: str) -> None:
    kernel, cli = executed[name]["kernel"]["json"], executed[name]["cli"]
    assert _verdicts(kernel) == _verdicts(cli)
    assert kernel["isolation"] == "graded in this Python process: no sandbox, your own machine"
    assert kernel["error"] is None and cli["error"] is None


def test_the_verdicts_are_the_exercises_own(executed: dict[str, Any]) -> None:
    verdicts = {name: {r["name"]: r["verdict"] for r in executed[name]["cli"]["returns"]} for name in CHECKS}
    assert verdicts["transposed"] == {"f": "pass", "auto_grad": "pass", "user_grad": "logic"}
    assert set(verdicts["correct"].values()) == {"pass"}
    assert verdicts["affine"] == {"out": "pass", "dx": "pass", "dw": "pass", "db": "logic"}


@pytest.mark.parametrize("name", list(CHECKS))
def test_checking_leaves_the_kernels_random_generators_as_they_were(
    executed: dict[str, Any], name: str
) -> None:
    assert executed[name]["kernel"]["rng kept"] is True


@pytest.mark.parametrize("name", ["transposed", "affine"])
def test_a_check_shows_in_the_notebook_as_html_with_the_failing_entries_as_a_grid(
    executed: dict[str, Any], name: str
) -> None:
    page = executed[name]["shown"]["text/html"]
    # the kernel's own result: a CLI grading checks other trials against autograd (judging/provenance.py)
    returns = executed[name]["kernel"]["json"]["returns"]
    (case,) = [r["smallest_failing_case"] for r in returns if r["verdict"] == "logic"]
    # The grid as the terminal draws it: a vector's entries as a row.
    failing = {(i[0], i[1]) if len(i) == 2 else (0, i[0]) for i in case["failing_indices"]}
    cells = re.findall(r'<td class="(fail|pass)" data-row="(\d+)" data-col="(\d+)"', page)
    assert '<table class="grid"' in page
    assert {(int(i), int(j)) for word, i, j in cells if word == "fail"} == failing
    passing = {(int(i), int(j)) for word, i, j in cells if word == "pass"}
    assert passing == ({(0, 0), (1, 1)} if name == "transposed" else set())  # db_mean: all of db fails
    exercise, _, functions = CHECKS[name]
    replay = f"grader.check({str(exercise)!r}, {functions}, trial={case['trial']})"
    assert f'<code class="replay">{html.escape(replay)}</code>' in page


def test_a_check_that_passes_shows_no_grid(executed: dict[str, Any]) -> None:
    page = executed["correct"]["shown"]["text/html"]
    assert 'data-verdict="pass"' in page and '<table class="grid"' not in page


def test_a_check_shows_as_text_too_in_the_notebook(executed: dict[str, Any]) -> None:
    text = executed["transposed"]["shown"]["text/plain"]
    assert "user_grad" in text and "logic" in text
    assert "isolation: graded in this Python process: no sandbox, your own machine" in text
    assert f"grader.check({str(GRAPH2)!r}, graph2, trial=0)" in text  # the replay, in the notebook's terms


def test_a_failure_in_the_notebook_names_its_cells(executed: dict[str, Any]) -> None:
    # The cells are counted as executed: the import, then three for each check, then these two.
    helper, caller = 2 + 3 * len(CHECKS), 3 + 3 * len(CHECKS)
    lines = executed["traceback"].splitlines()
    assert f'File "In[{caller}]", line 2, in graph2' in lines[0]
    assert f'File "In[{helper}]", line 2, in sigmoid' in lines[2]
    assert lines[-1].startswith("ValueError: matmul")


def test_a_misspelt_exercise_id_is_one_line_naming_the_closest_ids_in_the_notebook(
    executed: dict[str, Any],
) -> None:
    """The kernel shows the grader's error as the student's line's one consequence: no frame of the
    grader's lookup (api.py, spec/loading.py), the id given, the ids it may have meant."""
    error = executed["misspelt"]
    assert error["ename"] == "UsageError"
    (line,) = error["traceback"]
    assert line.startswith("UsageError: 'graph9': ") and "did you mean 'graph2'" in line
    assert "api.py" not in line and "loading.py" not in line


# --- outside Jupyter: the same API in this process ----------------------------------------------------


def _defined(source: str) -> dict[str, Any]:
    """The functions a student's cell defines, as a kernel would hold them."""
    namespace: dict[str, Any] = {}
    exec(compile(source, str(ROOT / "cell.py"), "exec"), namespace)
    return namespace


def test_the_text_of_a_check_names_the_verdicts_the_replay_and_where_it_ran() -> None:
    graph2 = _defined(CHECKS["transposed"][1])["graph2"]
    checked = grader.check(GRAPH2, graph2, trials=5, seed=3)
    assert not checked.passed and (checked.score, checked.max_score) == (6, 10)
    assert checked.result.returns[2].verdict is Verdict.LOGIC
    text = str(checked)
    assert repr(checked) == text
    assert "graph2() in this Python process" in text
    assert "isolation: graded in this Python process: no sandbox, your own machine" in text
    assert f"replay: grader.check({str(GRAPH2)!r}, graph2, seed=3, trial=0)" in text
    assert "\x1b[" not in text  # plain text, not terminal colours


def test_a_replay_runs_its_one_trial_and_shows_it_whole() -> None:
    graph2 = _defined(CHECKS["transposed"][1])["graph2"]
    replayed = grader.check(GRAPH2, graph2, trial=4)
    assert replayed.result.trials == 1 and replayed.result.returns[2].verdict is Verdict.LOGIC
    text = str(replayed)
    assert "(seed 0, trial 4," in text
    assert "trial 4 (d=" in text and "W_np (shape (" in text and "user_grad expected" in text
    page = replayed._repr_html_()
    assert '<pre class="grader-case">' in page and "user_grad got" in page
    # the replay is the call just made: no call to replay it again, in the text or the page
    assert "replay:" not in text and "replay:" not in page


def test_functions_go_by_their_names_or_by_keyword() -> None:
    functions = _defined(CHECKS["affine"][1])
    backward = functions["affine_backward"]
    checked = grader.check(AFFINE, backward, affine_forward=functions["affine_forward"], trials=3)
    assert [r.verdict for r in checked.result.returns] == [Verdict.PASS] * 3 + [Verdict.LOGIC]
    with pytest.raises(UsageError, match=r"no function for affine_backward; .* calls affine_forward and aff"):
        grader.check(AFFINE, functions["affine_forward"])
    with pytest.raises(UsageError, match="a function named <lambda> is not a function of exercise graph2"):
        grader.check(GRAPH2, lambda W_np, x_np, b_np: 0)


def test_a_failing_call_shows_its_traceback_in_the_students_code() -> None:
    source = "def graph2(W_np, x_np, b_np):\n    return W_np @ b_np.T @ x_np @ W_np\n"
    checked = grader.check(GRAPH2, _defined(source)["graph2"], trials=3)
    first = checked.result.first_trial_error
    assert first is not None and first.kind is FailureKind.EXCEPTION
    assert 'File "cell.py", line 2, in graph2' in first.traceback
    assert "in_process.py" not in first.traceback and "sandbox/worker" not in first.traceback


def test_a_check_puts_back_what_its_reruns_patch_and_its_signal_handler() -> None:
    import torch

    handler, threads, asarray = signal.getsignal(signal.SIGINT), torch.get_num_threads(), np.asarray
    dtype = torch.get_default_dtype()
    printed = "def graph2(W_np, x_np, b_np):\n    print('hello')\n    return 0.0, W_np * 0, W_np * 0\n"
    checked = grader.check(GRAPH2, _defined(printed)["graph2"], trials=3)
    assert checked.result.stdout.startswith("hello\nhello\n")  # kept, as the sandbox keeps it
    assert signal.getsignal(signal.SIGINT) is handler
    assert (torch.get_num_threads(), np.asarray, torch.get_default_dtype()) == (threads, asarray, dtype)


def test_ctrl_c_in_a_call_ends_the_check() -> None:
    calls = []

    def graph2(W_np: Any, x_np: Any, b_np: Any) -> tuple[Any, ...]:
        calls.append(1)
        os.kill(os.getpid(), signal.SIGINT)  # as Jupyter's "interrupt the kernel" does
        return 0.0, W_np, W_np

    with pytest.raises(KeyboardInterrupt):
        grader.check(GRAPH2, graph2, trials=5)
    assert len(calls) == 1


def test_an_exercise_is_found_by_its_id_under_the_current_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert grader.find_exercise("graph2") == GRAPH2
    assert grader.find_exercise("cs231n.a2.affine") == AFFINE
    assert grader.load_exercise("exercises/mac0460/graph2").id == "graph2"
    with pytest.raises(UsageError, match="'graph9': no exercise folder of that name") as raised:
        grader.find_exercise("graph9")
    # raised from the API's own frame: a plain Python traceback shows no lookup below it
    assert raised.traceback[-1].name == "called" and len(str(raised.value).splitlines()) == 1


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"trials": 0}, "trials=0; give how many trials to run"),
        ({"trials": "5"}, "trials='5'; give how many trials to run"),
        ({"seed": "x"}, "seed='x' is not a seed"),
        ({"trial": -1}, "trial=-1; give the number of the trial to replay"),
    ],
)
def test_bad_numbers_are_one_line_errors_before_anything_runs(given: dict[str, Any], said: str) -> None:
    graph2 = _defined(CHECKS["correct"][1])["graph2"]
    with pytest.raises(UsageError, match=re.escape(f"grader.check: {said}")):
        grader.check(GRAPH2, graph2, **given)
    if "trial" not in given:  # grade_file replays no single trial
        with pytest.raises(UsageError, match=re.escape(f"grader.grade_file: {said}")):
            grader.grade_file(GRAPH2, GRAPH2 / "solution.py", **given)


def test_grade_is_the_sandboxed_cli_as_a_value() -> None:
    result = grader.grade(GRAPH2, GRAPH2 / "wrong" / "transpose.py", trials=5)
    assert [r.verdict for r in result.returns] == [Verdict.PASS, Verdict.PASS, Verdict.LOGIC]
    assert result.isolation.level is not IsolationLevel.NONE


def test_importing_grader_imports_none_of_its_dependencies() -> None:
    heavy = "{'torch', 'numpy', 'rich', 'pydantic', 'yaml'}"
    code = f"import sys, grader; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
