"""The real `grader` command in a real subprocess: JSON contract, exit codes, spec errors, class runs."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    CORRECT_GRAPH2,
    GRAPH2,
    ROOT,
    TRANSPOSED_GRAPH2,
    copy_exercise,
    exercise_folder,
    line_of,
    without_top_level_block,
    write_exercise,
    write_source,
)

Run = Callable[..., subprocess.CompletedProcess[str]]

RESULT_FIELDS = {"exercise", "submission", "seed", "trials", "score", "max_score", "error", "returns"}
RETURN_FIELDS = {"name", "verdict", "trials", "failed_trials", "message", "misconception", "failing_entries"}
ENTRY_FIELDS = {"index", "expected", "got", "abs_error", "rel_error", "ulps"}


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def good_check(run_grader: Run, work: Path) -> subprocess.CompletedProcess[str]:
    path = write_source(work / "good" / "solution.py", CORRECT_GRAPH2)
    return run_grader("check", GRAPH2, path, "--trials", "30", "--seed", "5", "--json")


@pytest.fixture(scope="module")
def wrong_check(run_grader: Run, work: Path) -> subprocess.CompletedProcess[str]:
    path = write_source(work / "wrong" / "transposed.py", TRANSPOSED_GRAPH2)
    return run_grader("check", GRAPH2, path, "--trials", "30", "--json")


def test_check_json_has_the_stable_fields(good_check: subprocess.CompletedProcess[str], work: Path) -> None:
    assert good_check.returncode == 0, good_check.stderr
    (result,) = json_lines(good_check.stdout)
    assert set(result) >= RESULT_FIELDS
    assert result["exercise"] == "graph2"
    assert result["submission"].endswith("solution.py")
    assert result["seed"] == 5
    assert result["trials"] == 30
    assert result["score"] == result["max_score"] == 10
    assert result["error"] is None
    assert [r["name"] for r in result["returns"]] == ["f", "auto_grad", "user_grad"]
    for ret in result["returns"]:
        assert set(ret) >= RETURN_FIELDS
        assert ret["verdict"] == "pass"
        # every return is judged on every trial: the autograd check runs its trials again in a worker of
        # its own (judging/provenance.py)
        assert ret["trials"] == 30
        assert ret["failed_trials"] == 0
        assert isinstance(ret["message"], str) and ret["message"]
        assert ret["misconception"] is None
        assert ret["failing_entries"] == []


def test_check_json_of_a_wrong_answer(wrong_check: subprocess.CompletedProcess[str]) -> None:
    assert wrong_check.returncode == 1, wrong_check.stderr
    (result,) = json_lines(wrong_check.stdout)
    assert result["error"] is None
    returns = {r["name"]: r for r in result["returns"]}
    assert {n: r["verdict"] for n, r in returns.items()} == {
        "f": "pass",
        "auto_grad": "pass",
        "user_grad": "logic",
    }
    assert result["score"] == result["max_score"] - 4
    bad = returns["user_grad"]
    assert 0 < bad["failed_trials"] <= bad["trials"] == 30  # wrong anyway: judged on every trial
    assert bad["message"]
    assert bad["failing_entries"]
    for entry in bad["failing_entries"]:
        assert set(entry) >= ENTRY_FIELDS
        assert len(entry["index"]) == 2
        assert entry["abs_error"] == pytest.approx(abs(entry["got"] - entry["expected"]))
        assert entry["abs_error"] > 0


def test_the_repro_command_replays_the_failing_trial(
    wrong_check: subprocess.CompletedProcess[str], run_grader: Run
) -> None:
    (result,) = json_lines(wrong_check.stdout)
    user_grad = next(r for r in result["returns"] if r["name"] == "user_grad")
    case = user_grad.get("smallest_failing_case")
    if case is None:
        pytest.skip("this JSON output does not carry a repro command")
    command = case["repro"].split()
    assert command[:2] == ["grader", "repro"]
    replay = run_grader(*command[1:], "--json")
    assert replay.returncode == 1, replay.stderr
    (again,) = json_lines(replay.stdout)
    replayed = next(r for r in again["returns"] if r["name"] == "user_grad")
    assert replayed["verdict"] == "logic"
    assert replayed["trials"] == 1
    # the same entries fail with the same numbers (the envelope is compared in the next test)
    assert [without_envelope(e) for e in replayed["failing_entries"]] == [
        without_envelope(e) for e in user_grad["failing_entries"]
    ]


def without_envelope(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "envelope_ratio"}


def stable(result: dict[str, Any]) -> dict[str, Any]:
    """The result but its timings (of the whole run, and of the import)."""
    return {k: v for k, v in result.items() if k not in ("seconds", "import_seconds")}


def test_the_same_command_gives_the_same_result(
    wrong_check: subprocess.CompletedProcess[str], run_grader: Run, work: Path
) -> None:
    again = run_grader(*wrong_check.args[1:])
    assert again.returncode == wrong_check.returncode
    (first,) = json_lines(wrong_check.stdout)
    (second,) = json_lines(again.stdout)
    assert stable(second) == stable(first)


def test_check_json_of_a_crashing_submission(run_grader: Run, work: Path) -> None:
    path = write_source(
        work / "crash" / "crash.py",
        """
        def graph2(W_np, x_np, b_np):
            raise RuntimeError("nope")
    """,
    )
    proc = run_grader("check", GRAPH2, path, "--trials", "3", "--json")
    assert proc.returncode == 1, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["error"]["kind"] == "exception"
    assert "nope" in result["error"]["message"]
    assert result["score"] == 0
    assert {r["verdict"] for r in result["returns"]} == {"error"}


def test_check_json_stays_strict_json_with_nan_and_inf(run_grader: Run, work: Path) -> None:
    path = write_source(
        work / "nan" / "nan.py",
        """
        import numpy as np


        def graph2(W_np, x_np, b_np):
            # NaN and infinities on every trial, in every rerun too: no format's range (logic), with the
            # entries listed
            return float("nan"), np.full_like(W_np, np.inf), np.full_like(W_np, np.nan)
        """,
    )
    proc = run_grader("check", GRAPH2, path, "--trials", "3", "--json")
    assert proc.returncode == 1, proc.stderr

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} is not JSON; other tools cannot read it")

    result = json.loads(proc.stdout, parse_constant=refuse)
    assert {r["verdict"] for r in result["returns"]} == {"logic"}
    assert all(r["failing_entries"] for r in result["returns"])


def test_check_terminal_report_names_the_verdicts(run_grader: Run, work: Path) -> None:
    path = write_source(work / "terminal" / "transposed.py", TRANSPOSED_GRAPH2)
    proc = run_grader("check", GRAPH2, path, "--trials", "10")
    assert proc.returncode == 1, proc.stderr
    assert "user_grad" in proc.stdout and "logic" in proc.stdout and "pass" in proc.stdout
    assert "likely mistake: transposed" in proc.stdout
    assert "grader repro" in proc.stdout  # the command that replays the smallest failing case


def test_repro_shows_the_whole_case(wrong_check: subprocess.CompletedProcess[str], run_grader: Run) -> None:
    """The smallest case of a mistake that shows at every size is at the smallest size (trial 0), and
    `grader repro` shows its inputs, what was expected and what came back."""
    # the shared check of the transposed hand-in (30 trials: at every size, trial 0 the smallest, whatever
    # the count)
    (result,) = json_lines(wrong_check.stdout)
    user_grad = next(r for r in result["returns"] if r["name"] == "user_grad")
    assert user_grad["misconception"] == "transposed" and user_grad["feedback"]
    case = user_grad["smallest_failing_case"]
    assert case["trial"] == 0 and case["sizes"] == {"d": 2}  # graph2's smallest size
    replay = run_grader(*case["repro"].split()[1:])
    assert replay.returncode == 1, replay.stderr
    for shown in ("trial 0 (d=2), inputs:", "W_np (shape (2, 2)", "user_grad expected", "user_grad got"):
        assert shown in replay.stdout


def test_broken_spec_exits_2_with_file_line_and_field(run_grader: Run, work: Path) -> None:
    folder = copy_exercise(work / "broken_check", [("trials: 1000", "trails: 1000")])
    spec = folder / "exercise.yaml"
    proc = run_grader("check", folder, GRAPH2 / "solution.py", "--json")
    assert proc.returncode == 2
    assert proc.stdout.strip() == ""
    # file:line in one piece, as editors and CI logs link it
    assert f"{spec}:{line_of(spec.read_text(encoding='utf-8'), 'trails:')}:" in proc.stderr
    assert "trails" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("check", "exercises/mac0460/graph2", "no_such_file.py"),
        ("check", "no_such_exercise", "exercises/mac0460/graph2/solution.py"),
        ("check", "exercises/mac0460/graph2", "exercises/mac0460/graph2/solution.py", "--trials", "0"),
        ("check", "exercises/mac0460/graph2"),
        ("frobnicate",),
    ],
)
def test_usage_errors_exit_2(run_grader: Run, args: tuple[str, ...]) -> None:
    proc = run_grader(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip()
    assert "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def class_run(run_grader: Run, work: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    exercises = work / "class" / "exercises"
    copy_exercise(exercises / "graph2")
    copy_exercise(exercises / "layer", [("id: graph2", "id: layer")])
    copy_exercise(exercises / "broken", [("id: graph2", "id: broken"), ("dist: uniform}", "dist: unifrom}")])
    students = work / "class" / "submissions"
    write_source(students / "alice" / "solution.py", CORRECT_GRAPH2)
    # bob hands in several modules; the entry function is in the second one
    write_source(students / "bob" / "a_helpers.py", "def unrelated():\n    return 1\n")
    write_source(students / "bob" / "work.py", TRANSPOSED_GRAPH2)
    write_source(students / "carol" / "loop.py", "def graph2(W_np, x_np, b_np):\n    raise SystemExit(0)\n")
    proc = run_grader("run", exercises, "--submissions", students, "--trials", "20", "--json", "-j", "2")
    return proc, exercises


def test_run_grades_the_good_exercises_despite_a_broken_one(
    class_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, exercises = class_run
    assert proc.returncode == 2, proc.stderr
    broken_spec = exercises / "broken" / "exercise.yaml"
    text = broken_spec.read_text(encoding="utf-8")
    assert f"{broken_spec}:{line_of(text, 'unifrom')}:" in proc.stderr
    assert "dist" in proc.stderr
    results = json_lines(proc.stdout)
    graded = {(r["student"], r["exercise"]): r for r in results}
    assert set(graded) == {(s, e) for s in ("alice", "bob", "carol") for e in ("graph2", "layer")}
    for exercise in ("graph2", "layer"):
        assert graded["alice", exercise]["score"] == 10
        bob = {r["name"]: r["verdict"] for r in graded["bob", exercise]["returns"]}
        assert bob == {"f": "pass", "auto_grad": "pass", "user_grad": "logic"}
        assert graded["carol", exercise]["error"]["kind"] == "exit"
        # every return judged on every trial (the autograd check's run is a worker of its own)
        trials = {r["name"]: r["trials"] for r in graded["alice", exercise]["returns"]}
        assert trials == {"f": 20, "auto_grad": 20, "user_grad": 20}


def test_run_grades_the_class_when_one_student_handed_in_no_python(run_grader: Run, work: Path) -> None:
    exercises = work / "class_nopy" / "exercises"
    copy_exercise(exercises / "graph2")
    students = work / "class_nopy" / "submissions"
    write_source(students / "adam" / "notebook.ipynb", "{}")  # graded first: students are sorted
    write_source(students / "bella" / "solution.py", CORRECT_GRAPH2)
    write_source(students / "carl" / "solution.py", TRANSPOSED_GRAPH2)
    proc = run_grader("run", exercises, "--submissions", students, "--trials", "5", "--json")
    graded = {r["student"]: r for r in json_lines(proc.stdout)}
    assert graded["bella"]["score"] == 10, proc.stderr
    assert graded["carl"]["score"] < 10
    assert proc.returncode != 0
    assert "adam" in proc.stdout + proc.stderr


def test_run_exits_1_when_a_return_fails_and_specs_are_fine(run_grader: Run, work: Path) -> None:
    exercises = work / "class1" / "exercises"
    copy_exercise(exercises / "graph2")
    students = work / "class1" / "submissions"
    write_source(students / "dave.py", TRANSPOSED_GRAPH2)  # a student can be a single file
    proc = run_grader("run", exercises, "--submissions", students, "--trials", "10")
    assert proc.returncode == 1, proc.stderr
    assert "dave" in proc.stdout and "graph2" in proc.stdout


def test_validate_a_good_exercise_exits_0(run_grader: Run, work: Path) -> None:
    folder = copy_exercise(work / "validate_good")
    spec = folder / "exercise.yaml"
    # the reference solution only: the known-wrong files are the exercise author's, checked in test_cases;
    # and so its declared misconceptions, which validate fails where no known-wrong file shows them fire
    text = without_top_level_block(spec.read_text(encoding="utf-8"), "wrong")
    spec.write_text(without_top_level_block(text, "misconceptions"), encoding="utf-8")
    proc = run_grader("validate", folder, "--trials", "30")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout
    assert "graph2" in proc.stdout


def test_validate_reports_a_known_wrong_file_that_passes(run_grader: Run, work: Path) -> None:
    folder = copy_exercise(work / "validate_bad")
    spec = folder / "exercise.yaml"
    text = without_top_level_block(spec.read_text(encoding="utf-8"), "wrong").rstrip("\n")
    text += (
        "\nwrong:\n  - file: solution.py\n    mistake: claims to be wrong\n    expect: {user_grad: logic}\n"
    )
    spec.write_text(text, encoding="utf-8")
    proc = run_grader("validate", folder, "--trials", "20")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL" in proc.stdout
    assert "claims to be wrong" in proc.stdout


def test_new_scaffolds_an_exercise_that_validates(run_grader: Run, work: Path) -> None:
    made = run_grader("new", "tanh_layer", "--dir", work / "authored")
    assert made.returncode == 0, made.stderr
    folder = work / "authored" / "tanh_layer"
    assert {"exercise.yaml", "solution.py", "starter.py"} <= {p.name for p in folder.iterdir()}
    assert f"grader validate {folder}" in made.stdout
    checked = run_grader("validate", folder, "--trials", "30")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for check in ("finite differences", "reference solution", "float32 variant", "mistakes", "known-wrong"):
        assert check in checked.stdout
    again = run_grader("new", "tanh_layer", "--dir", work / "authored")
    assert again.returncode == 2
    assert "already exists" in again.stderr


NAIVE_SOFTMAX_CE = """
    import numpy as np
    import torch


    def softmax_ce(z_np, y_np):
        z = torch.tensor(z_np, requires_grad=True)
        N = z_np.shape[0]
        loss = -torch.log_softmax(z, dim=1)[torch.arange(N), torch.tensor(y_np)].mean()
        loss.backward()
        p = np.exp(z_np) / np.exp(z_np).sum(axis=1, keepdims=True)  # overflows in float32
        onehot = np.zeros_like(z_np)
        onehot[np.arange(N), y_np] = 1
        return loss, z.grad, (p - onehot) / N
"""


def test_validate_fails_a_reference_that_only_works_in_float64(run_grader: Run, work: Path) -> None:
    folder = copy_exercise(work / "naive_reference", source=exercise_folder("softmax_ce"))
    spec = folder / "exercise.yaml"
    spec.write_text(without_top_level_block(spec.read_text(encoding="utf-8"), "wrong"), encoding="utf-8")
    write_source(folder / "solution.py", NAIVE_SOFTMAX_CE)
    proc = run_grader("validate", folder, "--trials", "30")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any("ok" in line and "reference solution" in line for line in lines), proc.stdout
    assert any("FAIL" in line and "float32 variant" in line for line in lines), proc.stdout
    assert "instability" in proc.stdout


def test_validate_fails_test_points_that_hide_the_regularisation(run_grader: Run, work: Path) -> None:
    spec = """
        id: ridge
        title: Ridge regression with a regularisation too weak to see
        entry: ridge
        args: [X, y, w, reg]
        sizes: {N: {min: 2, max: 6}, D: {min: 1, max: 4}}
        inputs:
          X: {shape: [N, D], dist: normal}
          y: {shape: [N], dist: normal}
          w: {shape: [D], dist: normal}
          reg: {shape: [], dist: constant, value: 1.0e-12}
        graph: |
          r = X @ w - y
          loss = mean(r * r) + reg * sum(w * w)
        returns:
          - {name: loss, value: loss}
          - {name: dw, grad: {of: loss, wrt: w}}
        solution: null
        starter: null
    """
    folder = write_exercise(work / "ridge", spec)
    proc = run_grader("validate", folder, "--trials", "30")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL test points tell standard mistakes apart" in " ".join(proc.stdout.split())
    assert "dw: loss without its term `reg * sum(w * w)`" in " ".join(proc.stdout.split())
    stronger = (
        (folder / "exercise.yaml")
        .read_text(encoding="utf-8")
        .replace("constant, value: 1.0e-12", "uniform, low: 0.1, high: 1")
    )
    (folder / "exercise.yaml").write_text(stronger, encoding="utf-8")
    proc = run_grader("validate", folder, "--trials", "30")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_run_marks_exercises_a_student_did_not_attempt(run_grader: Run, work: Path) -> None:
    exercises = work / "class_missing" / "exercises"
    copy_exercise(exercises / "graph2")
    copy_exercise(exercises / "reciprocal", source=exercise_folder("reciprocal"))
    students = work / "class_missing" / "submissions"
    write_source(students / "erin" / "hw.py", CORRECT_GRAPH2)  # graph2 only
    (students / "finn").mkdir()
    (students / "finn" / "reciprocal.py").write_bytes(
        (exercise_folder("reciprocal") / "solution.py").read_bytes()
    )
    proc = run_grader("run", exercises, "--submissions", students, "--trials", "5", "--json")
    graded = {line["exercise"]: line for line in json_lines(proc.stdout) if line["student"] == "erin"}
    assert graded["graph2"]["error"] is None and graded["graph2"]["score"] == 10
    assert graded["reciprocal"]["error"]["kind"] == "not-submitted"
    assert "reciprocal()" in graded["reciprocal"]["error"]["message"]
    table = run_grader("run", exercises, "--submissions", students, "--trials", "5")
    assert "erin did not hand in: reciprocal" in " ".join(table.stdout.split())


def test_the_tutorial_part_2_validates_as_written(run_grader: Run, work: Path) -> None:
    """The layer exercise docs/tutorial.md walks through, its files taken from that page itself."""
    readme = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    part = readme[readme.index("## Tutorial, part 2") :]
    end = part.find("\n## ", 1)  # the next section, or the page's end
    part = part if end < 0 else part[:end]
    written = []
    for block in re.findall(r"```(?:yaml|python)\n(.*?)```", part, flags=re.DOTALL):
        first, _, body = block.partition("\n")
        relative = first.removeprefix("# ")
        target = work / "tutorial" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        written.append(relative)
    assert "exercises/leaky_relu_layer/exercise.yaml" in written and len(written) == 5, written
    proc = run_grader("validate", work / "tutorial" / "exercises" / "leaky_relu_layer")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok   known-wrong wrong/out_cache.py" in proc.stdout
    assert "defines leaky_relu_forward(x, param), leaky_relu_backward(dout, cache)" in proc.stdout


def test_check_on_a_course_folder_grades_every_exercise_the_file_defines(run_grader: Run, work: Path) -> None:
    """A student hands in a whole layers.py: each function the course's folder grades is found by name."""
    course = work / "course"
    copy_exercise(course / "a1" / "graph2")
    copy_exercise(course / "a2" / "reciprocal", source=exercise_folder("reciprocal"))
    copy_exercise(course / "a2" / "graph1", source=exercise_folder("graph1"))
    hand_in = work / "layers.py"
    reciprocal = (exercise_folder("reciprocal") / "solution.py").read_text()
    hand_in.write_text(textwrap.dedent(CORRECT_GRAPH2) + "\n\n" + reciprocal, encoding="utf-8")
    proc = run_grader("check", course, hand_in, "--trials", "10", "--json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(line["exercise"] for line in json_lines(proc.stdout)) == ["graph2", "reciprocal"]
    nothing = write_source(work / "other.py", "def unrelated():\n    return 1\n")
    refused = run_grader("check", course, nothing, "--trials", "10")
    assert refused.returncode == 2
    assert "defines none of the functions the 3 exercises under" in refused.stderr
    assert "graph1, graph2, reciprocal" in refused.stderr
