"""`grader run --cluster`: a class graded on a real Dask cluster (a scheduler and two workers as
processes on loopback), against the same class graded here; a worker killed mid-run; local:N."""

from __future__ import annotations

import concurrent.futures
import csv
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import (
    CORRECT_GRAPH2,
    TRANSPOSED_GRAPH2,
    copy_exercise,
    grader_command,
    grader_in_background,
    handins,
    write_source,
)

from grader.classrun import ClassRun, plan
from grader.exercise.settings import Settings
from grader.exercise.spec import load_exercise
from grader.gradebook import Gradebook, default_path
from grader.jobs import Job, JobLost, TaskResult
from grader.outcomes import FailureKind

distributed = pytest.importorskip("distributed")

STUDENTS = 8
DASK = Path(sys.executable).parent / "dask"


@dataclass(frozen=True)
class Cluster:
    address: str
    workers: list[subprocess.Popen[bytes]]


def _scheduler_address(scheduler_file: Path, deadline: float) -> str:
    """The address the scheduler writes to its file, read once the file holds all of it (Dask creates it
    before it writes it: a CI run read it empty in between)."""
    while True:
        try:
            return str(json.loads(scheduler_file.read_text(encoding="utf-8"))["address"])
        except (OSError, ValueError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def _running(folder: Path, workers: list[tuple[list[str], dict[str, str]]]) -> Iterator[Cluster]:
    """A scheduler on a free loopback port and one-thread workers (each its extra arguments and
    environment), each in its own session; all killed at the end."""
    scheduler_file = folder / "scheduler.json"
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (folder / f"{len(started)}.log").open("wb")
        process = subprocess.Popen(
            [str(DASK), *map(str, args)],
            stdout=log,
            stderr=log,
            cwd=folder,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        started.append(process)
        return process

    try:
        start(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--scheduler-file",
            scheduler_file,
            "--no-dashboard",
        )
        address = _scheduler_address(scheduler_file, deadline=time.monotonic() + 60)
        one_thread = ["--nworkers", "1", "--nthreads", "1", "--no-dashboard"]
        processes = [
            start("worker", address, *one_thread, "--name", f"w{i}", *args, env=env)
            for i, (args, env) in enumerate(workers)
        ]
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(len(workers), timeout=60)
        yield Cluster(address, processes)
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two workers: w0 starts its zygotes with the worker (the preload), w1 once the first run registers
    the plugin."""
    preloaded: tuple[list[str], dict[str, str]] = (["--preload", "grader.cluster.preload"], {})
    with _running(tmp_path_factory.mktemp("dask"), [preloaded, ([], {})]) as up:
        yield up


def _zygotes_below(pid: int) -> int:
    """How many of the grader's zygotes run below a process (its children, theirs, and so on)."""
    children: dict[int, list[int]] = {}
    commands: dict[int, bytes] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            commands[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = 0, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found += b"grader.sandbox.zygote" in commands.get(child, b"") and b"bwrap" not in commands[child][:80]
        todo += children.get(child, [])
    return found


def test_a_worker_started_with_the_preload_has_warm_zygotes_before_any_run(cluster: Cluster) -> None:
    # The first test of the module: no grader run has registered the plugin yet.
    deadline = time.monotonic() + 60
    while not _zygotes_below(cluster.workers[0].pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _zygotes_below(cluster.workers[0].pid) == 1
    assert _zygotes_below(cluster.workers[1].pid) == 0


def _class(root: Path) -> Path:
    exercises = root / "exercises"
    copy_exercise(exercises / "graph2")
    for i in range(STUDENTS):  # s0, s3 and s6 transpose user_grad
        write_source(
            root / "submissions" / f"s{i}" / "hw.py", TRANSPOSED_GRAPH2 if i % 3 == 0 else CORRECT_GRAPH2
        )
    return exercises


def _grader(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [*grader_command(), "run", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=cwd, check=False)


def _table(out: Path) -> list[dict[str, str]]:
    """gradebook.csv's rows, but when each was graded."""
    with (out / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(row.pop("graded_at") for row in rows)
    return rows


def _stored(book: Path) -> list[tuple[str, str, str]]:
    try:
        with sqlite3.connect(book) as db:
            return db.execute("SELECT student, exercise, result FROM results ORDER BY student").fetchall()
    except sqlite3.Error:  # created but not yet initialised
        return []


@pytest.fixture(scope="module")
def graded_here(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    root = tmp_path_factory.mktemp("here")
    ran = _grader(_class(root), "--trials", "20", "-j", "2", "--out", root / "out", cwd=root)
    assert ran.returncode == 1, ran.stderr  # the transposed students
    table = _table(root / "out")
    assert {row["graph2"] for row in table} == {"10", "6"}
    return table


def test_a_class_graded_on_the_cluster_has_the_same_gradebook_as_here(
    cluster: Cluster, graded_here: list[dict[str, str]], tmp_path: Path
) -> None:
    ran = _grader(
        _class(tmp_path),
        "--trials",
        "20",
        "--cluster",
        cluster.address,
        "--out",
        tmp_path / "out",
        cwd=tmp_path,
    )
    assert ran.returncode == 1, ran.stderr
    assert f"{STUDENTS} hand-ins graded, 0 unchanged" in ran.stderr
    assert _table(tmp_path / "out") == graded_here
    stored = _stored(default_path(tmp_path / "submissions"))
    # Each result names the isolation of the machine its worker ran on: on loopback, this one's.
    assert {json.loads(result)["isolation"]["line"] for _, _, result in stored} == {_isolation_here()}


def _isolation_here() -> str:
    from grader.sandbox import isolation

    return isolation.current().description


def _started(exercises: Path, *args: str, cwd: Path) -> subprocess.Popen[str]:
    """`grader run` in its own session, returned once the gradebook holds 2 results."""
    command: list[str | Path] = ["run", exercises, "--trials", "200", "--out", cwd / "out", *args]
    book = default_path(cwd / "submissions")
    return grader_in_background(command, cwd, lambda: len(_stored(book)) >= 2, timeout=120)


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
def test_a_worker_killed_mid_run_has_its_jobs_graded_on_the_other(cluster: Cluster, tmp_path: Path) -> None:
    process = _started(_class(tmp_path), "--cluster", cluster.address, cwd=tmp_path)
    os.killpg(cluster.workers[0].pid, signal.SIGKILL)  # the worker and its nanny, mid-job
    book = default_path(tmp_path / "submissions")
    killed_at = len(_stored(book))
    _, stderr = process.communicate(timeout=120)
    assert killed_at < STUDENTS, "the run was not killed halfway"
    assert process.returncode == 1, stderr
    assert f"{STUDENTS} hand-ins graded, 0 unchanged" in stderr
    stored = [(student, exercise) for student, exercise, _ in _stored(book)]
    assert stored == [(f"s{i}", "graph2") for i in range(STUDENTS)]  # each exactly once
    table = _table(tmp_path / "out")
    assert {row["student"] for row in table if row["graph2"] != "10"} == {"s0", "s3", "s6"}


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
def test_ctrl_c_on_a_local_cluster_keeps_what_it_graded_and_another_backend_finishes(
    cluster: Cluster, graded_here: list[dict[str, str]], tmp_path: Path
) -> None:
    """A terminal's Ctrl-C reaches the whole process group, local:N's workers too: the gradings in
    flight still finish and are kept, and the next run (here on the other cluster) grades the rest."""
    exercises = _class(tmp_path)
    process = _started(exercises, "--cluster", "local:2", cwd=tmp_path)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    kept = len(_stored(default_path(tmp_path / "submissions")))
    assert 2 <= kept < STUDENTS
    assert f"interrupted: {STUDENTS - kept} left to grade" in " ".join(stderr.split())
    resumed = _grader(
        exercises, "--trials", "200", "--cluster", cluster.address, "--out", tmp_path / "out", cwd=tmp_path
    )
    assert f"{handins(STUDENTS - kept)} graded, {kept} unchanged" in resumed.stderr, resumed.stderr
    assert _table(tmp_path / "out") == graded_here  # the same scores as 20 trials here


def test_without_dask_the_cluster_flag_says_how_to_install_it(tmp_path: Path) -> None:
    exercises = _class(tmp_path)
    # An environment without the extra: importing distributed fails as it would there.
    hide = (
        "import sys; sys.modules['distributed'] = None; "
        "from grader.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    command = [sys.executable, "-c", hide, "run", str(exercises), "--cluster", "local:2"]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert ran.returncode == 2, ran.stderr
    assert "pip install gradient-grader[dask]" in ran.stderr
    assert not default_path(tmp_path / "submissions").exists()  # nothing graded, no gradebook begun


class _Lost:
    """A backend whose every grading is lost, as a cluster's is when its workers keep dying."""

    slots = 2

    def prestart(self, count: int) -> None:
        pass

    def share(self, references: object) -> None:
        pass

    def submit(
        self, job: Job, settings: Settings, references: object
    ) -> concurrent.futures.Future[tuple[TaskResult, ...]]:
        future: concurrent.futures.Future[tuple[TaskResult, ...]] = concurrent.futures.Future()
        future.set_exception(JobLost(f"{job.path}: 4 Dask workers died while grading this hand-in"))
        return future

    def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_hand_in_whose_workers_all_died_is_that_students_error_and_is_graded_again_next_run(
    tmp_path: Path,
) -> None:
    exercise = load_exercise(_class(tmp_path) / "graph2")
    students = [(f"s{i}", tmp_path / "submissions" / f"s{i}") for i in range(2)]
    settings = Settings(0, 5)
    tasks = plan([exercise], students, settings)
    with ClassRun(tmp_path / "book.sqlite", "test", settings) as run:
        outcome = run.grade(tasks, backend=_Lost())
    assert [r.student for r in outcome.results] == ["s0", "s1"]
    for result in outcome.results:
        failure = result.error
        assert failure is not None and failure.kind is FailureKind.INTERNAL
        assert "4 Dask workers died while grading this hand-in" in failure.message
    book = Gradebook(tmp_path / "book.sqlite")
    assert all(book.stored(task.key) is None for task in tasks)  # not the student's grade: regraded next run
    assert book.stopped(book.start_run("next")) == {}  # nor in flight: nothing to blame
    book.close()


def test_a_cluster_whose_worker_runs_another_grader_is_refused_before_anything_is_graded(
    tmp_path: Path,
) -> None:
    import grader

    other = tmp_path / "other"  # the grader at another version, installed where the worker finds it first
    package = Path(grader.__file__).parent
    shutil.copytree(package, other / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    init = other / "grader" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8").replace(grader.__version__, "0.0.1"), encoding="utf-8")
    exercises = _class(tmp_path)
    folder = tmp_path / "dask"
    folder.mkdir()
    with _running(folder, [([], {"PYTHONPATH": str(other)})]) as cluster:
        ran = _grader(exercises, "--trials", "20", "--cluster", cluster.address, cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    said = " ".join(ran.stderr.split())
    assert "1 of the cluster's 1 Dask workers run another grader" in said
    assert "grader 0.0.1" in said and str(other / "grader") in said  # which, and where it is installed
    assert f"this client's grader {grader.__version__}" in said
    assert not _stored(default_path(tmp_path / "submissions"))  # nothing graded


def test_a_cluster_whose_worker_cannot_import_the_grader_is_refused_in_plain_words(tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "grader"  # found first by the worker: a grader that does not import
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('no grader here')\n", encoding="utf-8")
    exercises = _class(tmp_path)
    folder = tmp_path / "dask"
    folder.mkdir()
    with _running(folder, [([], {"PYTHONPATH": str(broken.parent)})]) as cluster:
        ran = _grader(exercises, "--trials", "20", "--cluster", cluster.address, cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    said = " ".join(ran.stderr.split())
    assert "a Dask worker could not run this client's grader" in said and "no grader here" in said
    assert "Traceback" not in ran.stderr
    assert not _stored(default_path(tmp_path / "submissions"))
