"""A battery of hostile or careless graph2 submissions (tests/battery/manifest.yaml), graded as one batch.

Every item is graded in the real sandbox, two at a time, with shared references and a correct submission
in the same batch; each item then gets its expected error kind or verdicts. The exercise is a copy of
graph2 with small limits so that timeouts, memory and output floods end quickly.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORRECT_GRAPH2, copy_exercise, write_source

from grader.exercise.reference import compute_references
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.grading import grade
from grader.handin.discover import submission_from_path
from grader.results import SubmissionResult
from grader.sandbox import isolation

BATTERY = Path(__file__).resolve().parent / "battery"
MANIFEST: list[dict[str, Any]] = yaml.safe_load((BATTERY / "manifest.yaml").read_text(encoding="utf-8"))[
    "items"
]
LIMITS = (
    "\nlimits: {trial_seconds: 2, first_call_seconds: 2, submission_seconds: 20, import_seconds: 20, "
    "memory_mb: 2048}\n"
)
TRIALS = 20
SEED = 0
LISTEN_PORT = 47613  # network.py tries to connect here
GRADE_TIMEOUT = 120  # one grading past this means the grader hangs
CORRECT = "__correct__"


def _bubblewrap() -> bool:
    return isolation.current().level == "bubblewrap"


def _confined() -> bool:
    """Bubblewrap, or the base layer as root: an own uid per slot and Landlock."""
    current = isolation.current()
    return _bubblewrap() or (current.own_uid is not None and current.landlock > 0)


def _runs(item: dict[str, Any]) -> bool:
    requires = item.get("requires")
    if requires == "bubblewrap":
        return _bubblewrap()
    if requires == "confined":
        return _confined()
    if requires == "process-limit":
        return isolation.current().process_limit is not isolation.ProcessLimit.NONE
    return requires is None


def _escape_paths() -> list[Path]:
    return [Path(p) for item in MANIFEST for p in item.get("must_not_create", [])]


def _markers() -> set[str]:
    return {str(m) for item in MANIFEST if _runs(item) for m in item.get("spawns", [])}


def _survivors(markers: set[str]) -> list[str]:
    """Command lines of live processes (not zombies) that carry one of the markers as an argument."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        words = {a.decode(errors="replace") for a in args}
        if state != "Z" and words & markers:
            found.append(f"{proc.name}: {' '.join(w.decode(errors='replace') for w in args if w)}")
    return found


@pytest.fixture(scope="module")
def exercise(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(copy_exercise(tmp_path_factory.mktemp("battery") / "graph2", append=LIMITS))


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    """A live TCP listener on the host's loopback: a submission reaching it would prove network access."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", LISTEN_PORT))
    server.listen(16)
    yield server
    server.close()


@pytest.fixture(scope="module")
def batch(
    exercise: Exercise, listener: socket.socket, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SubmissionResult | BaseException]]:
    """Every item that can run here, plus a correct submission, graded two at a time."""
    for path in _escape_paths():
        path.unlink(missing_ok=True)
    entry = exercise.spec.entry
    references = compute_references(exercise, make_trials(exercise, SEED, TRIALS))
    jobs = {
        item["file"]: submission_from_path(BATTERY / item["file"], entry) for item in MANIFEST if _runs(item)
    }
    correct = write_source(tmp_path_factory.mktemp("correct") / "correct.py", CORRECT_GRAPH2)
    jobs[CORRECT] = submission_from_path(correct, entry)
    results: dict[str, SubmissionResult | BaseException] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures: dict[str, Future[SubmissionResult]] = {
            name: pool.submit(grade, exercise, submission, Settings(SEED), references=references)
            for name, submission in jobs.items()
        }
        for name, future in futures.items():
            try:
                results[name] = future.result(timeout=GRADE_TIMEOUT)
            except BaseException as exc:  # the grader died or hung on this one
                results[name] = exc
    yield results
    for path in _escape_paths():
        path.unlink(missing_ok=True)


def _describe(result: SubmissionResult) -> str:
    error = result.error or result.first_trial_error
    verdicts = {r.name: r.verdict.value for r in result.returns}
    where = f"error {error.kind}: {error.message}" if error is not None else "no error"
    return f"{where}; verdicts {verdicts}; stdout {result.stdout[:300]!r}"


def _param(item: dict[str, Any]) -> Any:
    marks = []
    level = item.get("xfail_when")
    if "xfail" in item and (level is None or level == isolation.current().level):
        marks.append(pytest.mark.xfail(reason=item["xfail"], strict=True))
    return pytest.param(item, id=item["file"], marks=marks)


@pytest.mark.parametrize("item", [_param(item) for item in MANIFEST])
def test_battery_item(item: dict[str, Any], batch: dict[str, SubmissionResult | BaseException]) -> None:
    if not _runs(item):
        pytest.skip(f"{item['file']} needs {item['requires']}: {isolation.current().description}")
    result = batch[item["file"]]
    if isinstance(result, BaseException):
        raise AssertionError(f"grading {item['file']} failed: {result!r}") from result
    seen = _describe(result)
    if "error" in item:
        error = result.error or result.first_trial_error
        assert error is not None, f"{item['file']}: expected error {item['error']}, got {seen}"
        assert error.kind == item["error"], f"{item['file']}: expected error {item['error']}, got {seen}"
        assert not result.passed
    else:
        verdicts = {r.name: r.verdict.value for r in result.returns}
        assert verdicts == item["verdicts"], f"{item['file']}: got {seen}"
        if all(v == "pass" for v in item["verdicts"].values()):
            assert result.error is None and result.passed, f"{item['file']}: got {seen}"
    if _confined():
        if item.get("no_leak"):
            assert "LEAK" not in result.stdout, f"{item['file']} reached what it must not: {result.stdout}"
        for path in item.get("must_not_create", []):
            assert not Path(path).exists(), f"{item['file']} wrote {path} outside its sandbox"


def test_correct_submission_in_the_same_batch_passes(
    batch: dict[str, SubmissionResult | BaseException],
) -> None:
    result = batch[CORRECT]
    assert isinstance(result, SubmissionResult), repr(result)
    assert result.error is None, _describe(result)
    assert result.passed and result.score == result.max_score
    assert result.trials == TRIALS


@pytest.mark.xfail(
    not _bubblewrap() and isolation.current().process_limit is not isolation.ProcessLimit.CGROUP,
    reason="without bubblewrap or a cgroup the worker's process group is killed: a setsid daemon escapes it",
    strict=True,
)
def test_no_process_of_the_battery_survives(batch: dict[str, SubmissionResult | BaseException]) -> None:
    markers = _markers()
    assert markers, "the manifest names no spawning item"
    deadline = time.monotonic() + 30  # killed process groups may take a moment to be reaped (more under load)
    survivors = _survivors(markers)
    while survivors and time.monotonic() < deadline:
        time.sleep(0.2)
        survivors = _survivors(markers)
    for line in survivors:  # do not leave them running for the next test
        pid = int(line.split(":", 1)[0])
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    assert not survivors, "processes started by the battery outlived their grading:\n" + "\n".join(survivors)


def test_one_grader_run_over_the_whole_battery_still_grades_the_correct_student(
    exercise: Exercise, listener: socket.socket, tmp_path: Path
) -> None:
    """The whole battery as one class, graded by the real command: the grader finishes, and passes the
    one correct student among them."""
    classroom = tmp_path / "class"
    students = []
    for item in MANIFEST:
        if not _runs(item):
            continue
        source = BATTERY / item["file"]
        student = classroom / source.name.removesuffix(".py")
        if source.is_dir():
            shutil.copytree(source, student)
        else:
            student.mkdir(parents=True)
            shutil.copy(source, student / source.name)
        students.append(student.name)
    write_source(classroom / "zz_correct" / "graph2.py", CORRECT_GRAPH2)
    students.append("zz_correct")
    command = [sys.executable, "-m", "grader", "run", str(exercise.root.parent)]
    command += ["--submissions", str(classroom), "--trials", str(TRIALS), "--json", "-j", "2"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    finally:
        for line in _survivors(_markers()):  # under reduced isolation a daemon may escape: tidy up
            with contextlib.suppress(OSError):
                os.kill(int(line.split(":", 1)[0]), 9)
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert done.returncode == 1, done.stderr[-2000:]
    assert sorted(results) == sorted(students)
    correct = results["zz_correct"]
    assert correct["error"] is None
    assert {r["name"]: r["verdict"] for r in correct["returns"]} == dict.fromkeys(
        ("f", "auto_grad", "user_grad"), "pass"
    )
