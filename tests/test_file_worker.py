"""One worker per hand-in file (grading.grade_file): a file that defines several exercises' functions is
imported once and graded on all of them in one sandboxed worker, each exercise's result as it is graded
alone; an exercise that crashes or hangs the worker costs the others nothing (they go on in a fresh one);
module state is one file's, shared; frames the hand-in forges between exercises end the worker, not the
next exercise's grade. Everything is judged from outside: the results, and the worker processes the
zygotes forked.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXERCISES, allow_subprocesses, copy_exercise, write_source

import grader
from grader.exercise.settings import Settings
from grader.exercise.spec import Exercise, load_exercise
from grader.grading import grade, grade_file
from grader.handin.discover import submission_from_path
from grader.outcomes import FailureKind, Verdict
from grader.results import SubmissionResult
from grader.sandbox.warm import WorkerPool
from grader.sandbox.worker.tracebacks import ONE_PROCESS

TRIALS = 12
SEED = 5
BASICS = EXERCISES / "basics"
# Short deadlines for the exercise that hangs: its first call's too (30 s by default).
QUICK = "\nlimits: {trial_seconds: 0.5, first_call_seconds: 0.5, submission_seconds: 60}\n"

RECIPROCAL = """
    def reciprocal(a_np):
        a = torch.tensor(a_np, requires_grad=True)
        loss = torch.sum(1 / a)
        loss.backward()
        return loss, a.grad, -1 / a_np**2
"""
SOFTPLUS = """
    def softplus(x_np):
        {before}
        x = torch.tensor(x_np, requires_grad=True)
        loss = (torch.clamp(x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))).sum()
        loss.backward()
        return loss, x.grad, 1.0 / (1.0 + np.exp(-x_np))
"""
RELU = """
    def relu_backward(dout, cache):
        return dout * (cache > 0)
"""
HEAD = "import ctypes\nimport os\n\nimport numpy as np\nimport torch\n"
CRASHES = {
    "exit": ("os._exit(3)", FailureKind.EXIT),
    "segfault": ("ctypes.string_at(0)", FailureKind.CRASH),
    "loop": ("while True: pass", FailureKind.TIMEOUT),
}


def _file(before: str = "pass", prelude: str = "") -> str:
    parts = [RECIPROCAL, SOFTPLUS.replace("{before}", before), RELU]
    return HEAD + prelude + "\n" + "\n".join(textwrap.dedent(p) for p in parts)


@pytest.fixture(scope="module")
def exercises(tmp_path_factory: pytest.TempPathFactory) -> list[Exercise]:
    root = tmp_path_factory.mktemp("file-worker")
    return [
        load_exercise(BASICS / "reciprocal"),
        load_exercise(copy_exercise(root / "softplus", source=BASICS / "softplus", append=QUICK)),
        load_exercise(BASICS / "relu_backward"),
    ]


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    """The file's workers come from a pool of their own: its zygotes' jobs are the processes forked."""
    own = WorkerPool()
    yield own
    own.close()


def _graded_together(
    exercises: list[Exercise], path: Path, pool: WorkerPool
) -> tuple[list[SubmissionResult], int]:
    """The file graded on every exercise by grade_file, and how many worker processes that took."""
    before = sum(z.jobs_served for z in pool.idle)
    handed = [(e, submission_from_path(path, e.spec.entry)) for e in exercises]
    results = grade_file(handed, Settings(SEED, TRIALS), pool=pool)
    return results, sum(z.jobs_served for z in pool.idle) - before


def _alone(exercise: Exercise, path: Path) -> SubmissionResult:
    return grade(exercise, submission_from_path(path, exercise.spec.entry), Settings(SEED, TRIALS))


def _seen(result: SubmissionResult, timing: bool = True) -> object:
    """What a student is shown of a result, but the time it took (a timeout's message names the CPU a call
    used: `timing=False` leaves messages out)."""
    error = None if result.error is None else (result.error.kind, result.error.message if timing else "")
    returns = [(r.name, r.verdict, r.score, r.message if timing else "") for r in result.returns]
    return result.exercise, result.score, result.max_score, error, returns, result.stdout


@pytest.fixture(scope="module")
def honest(exercises: list[Exercise], pool: WorkerPool, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_source(tmp_path_factory.mktemp("honest") / "layers.py", _file(prelude="print('imported')\n"))


def test_one_worker_grades_every_exercise_of_a_file_as_each_alone(
    exercises: list[Exercise], pool: WorkerPool, honest: Path
) -> None:
    together, workers = _graded_together(exercises, honest, pool)
    # The file imported once for the three, and once more in the autograd check's worker, which runs every
    # exercise's checked trials (judging/provenance.py).
    assert workers == 2
    assert [r.exercise for r in together] == [e.id for e in exercises]
    assert all(r.passed for r in together), [r.error for r in together]
    for result, exercise in zip(together, exercises, strict=True):
        assert _seen(result) == _seen(_alone(exercise, honest))
        assert result.stdout == "imported\n"  # what the import printed, shown with every exercise


@pytest.mark.parametrize("crash", sorted(CRASHES))
def test_a_crash_in_one_exercise_costs_the_others_nothing(
    exercises: list[Exercise], pool: WorkerPool, tmp_path: Path, crash: str
) -> None:
    """softplus, the second of three, ends or hangs the worker at its first call: it is graded as alone
    (a hang confirmed in a fresh worker), and relu_backward goes on in a fresh worker, full marks."""
    statement, kind = CRASHES[crash]
    path = write_source(tmp_path / "layers.py", _file(before=statement))
    together, workers = _graded_together(exercises, path, pool)
    reciprocal, softplus, relu = together
    assert reciprocal.passed and relu.passed, (reciprocal.error, relu.error)
    assert softplus.error is not None and softplus.error.kind is kind
    assert {r.verdict for r in softplus.returns} == {Verdict.ERROR}
    # The first worker, a fresh one for relu_backward; for a hang, a fresh one for softplus in between.
    # Then one autograd check's worker for the other two: softplus errs anyway, and is not run there.
    assert workers == (3 if kind is FailureKind.TIMEOUT else 2) + 1
    timing = kind is not FailureKind.TIMEOUT
    assert _seen(softplus, timing) == _seen(_alone(exercises[1], path), timing)
    assert _seen(relu) == _seen(_alone(exercises[2], path))


SHARED_STATE = "SEEN = []  # the functions called in this process\n"


def test_module_state_is_shared_by_the_exercises_of_a_file(
    exercises: list[Exercise], pool: WorkerPool, tmp_path: Path
) -> None:
    """One import: what the first exercise's calls leave in the module, the second's see (softplus is
    right only once reciprocal has been called in the same process). Graded alone it is wrong."""
    source = _file(before="assert 'reciprocal' in SEEN, 'reciprocal never ran here'", prelude=SHARED_STATE)
    source = source.replace(
        "def reciprocal(a_np):\n", "def reciprocal(a_np):\n    SEEN.append('reciprocal')\n"
    )
    path = write_source(tmp_path / "layers.py", source)
    together, workers = _graded_together(exercises, path, pool)
    assert workers == 2  # the ordinary worker and the autograd check's
    assert all(r.passed for r in together), [r.error or r.first_trial_error for r in together]
    alone = _alone(exercises[1], path)
    assert not alone.passed and alone.first_trial_error is not None
    assert "reciprocal never ran here" in alone.first_trial_error.message


FORGER = """
import gc
import sys

from grader.sandbox.protocol import ColumnWriter, encode, encode_wire, to_wire

_WRONG = np.zeros(1)


def _forge_after_done(channel):
    send = type(channel).send

    def send_and_forge(self, header, arrays=None):
        send(self, header, arrays)
        if header.get("type") == "done" and not getattr(self, "_forged", False):
            self._forged = True  # the next exercise's answers, before the grader has even sent its job
            kinds = [{"name": n, "ok": True, "dtype": "float64", "source": "numpy.ndarray"}
                     for n in ("f", "auto_grad", "user_grad")]
            columns = []
            for _ in kinds:  # each return's column: 12 trials of zeros
                column = ColumnWriter("float64", 1)
                for _ in range(12):
                    column.append(_WRONG)
                columns.append(column)
            trials = [np.arange(12, dtype=np.int64), np.full(12, 0.001),
                      np.tile(np.arange(3, dtype=np.int64), (12, 1))]
            header = {"type": "trials", "run": "first", "kinds": kinds, "returns": [0, 1, 2]}
            forged = [encode({"type": "ready", "import_seconds": 0.0, "skipped_imports": []})]
            forged.append(encode_wire(header, [to_wire(a) for a in trials], columns))
            forged.append(encode({"type": "pass-done"}))
            self._write(b"".join(forged))

    type(channel).send = send_and_forge


for _object in gc.get_objects():
    if type(_object).__name__ == "Channel" and hasattr(_object, "_progress"):
        _forge_after_done(_object)
"""


def test_frames_forged_between_exercises_end_the_worker_not_the_next_grade(
    exercises: list[Exercise], pool: WorkerPool, tmp_path: Path
) -> None:
    """The file patches the worker's result channel at import: after an exercise's last word it sends the
    next one's answers (zeros) before the grader has sent that one's job. Where they arrive before the
    grader sends the job, it finds frames where none is due, ends the worker, and grades the next exercise
    in a fresh one (which imports the forger again): on what its code returns. Where the machine delays
    them past it, their "ready" names no job the grader sent (each job's nonce): that exercise's pass ends
    as the hand-in's own protocol error. The same in the autograd check's worker costs a return derived
    by hand its points (the check did not complete). Never are the forged zeros taken as an exercise's
    answers."""
    path = write_source(tmp_path / "layers.py", _file(prelude=FORGER))
    together, workers = _graded_together(exercises, path, pool)
    reciprocal, *later = together
    assert reciprocal.passed, reciprocal.error
    # The first exercise's worker is never reused: it forged; the autograd check's workers alike. Three at
    # least (where the forged frames came after the second exercise's job, that exercise ends in the first
    # worker as a protocol error and the third gets the second worker; then the checked one).
    assert workers in (3, 4, 5, 6)
    for number, result in enumerate(later, start=1):
        if result.error is not None:  # the forged frames came after this exercise's job was sent
            assert result.error.kind is FailureKind.PROTOCOL, result.error
            assert "another job" in result.error.message
        elif result.passed:
            assert _seen(result) == _seen(_alone(exercises[number], path))
        else:
            # The forger ran in the autograd check's worker too and ended its pass there: the check did not
            # complete, which costs the return derived by hand its points, and nothing else.
            alone = {r.name: r for r in _alone(exercises[number], path).returns}
            for got in result.returns:
                if got.verdict is Verdict.PASS:
                    assert (got.score, got.message) == (alone[got.name].score, alone[got.name].message)
                else:
                    assert got.score == 0 and "did not complete" in got.message, got.message


def test_exercises_that_a_process_could_not_hold_together_get_a_worker_each(
    exercises: list[Exercise], pool: WorkerPool, honest: Path, tmp_path: Path
) -> None:
    """A worker's memory bound is the process's: an exercise that allows another gets its own."""
    bigger = copy_exercise(
        tmp_path / "relu_backward", source=BASICS / "relu_backward", append="\nlimits: {memory_mb: 3000}\n"
    )
    mixed = [*exercises[:2], load_exercise(bigger)]
    together, workers = _graded_together(mixed, honest, pool)
    assert workers == 4  # two groups, each an ordinary worker and an autograd check's
    assert all(r.passed for r in together)


def test_a_course_that_allows_subprocesses_lifts_the_filter_for_its_own_exercises_only(
    exercises: list[Exercise], pool: WorkerPool, tmp_path: Path
) -> None:
    """A file graded on an exercise of a course that allows subprocesses, then on one of a course that
    does not: both functions fork; the second is refused all the same (a worker's filter is for good,
    so the two get a worker each)."""
    allowing = allow_subprocesses(tmp_path / "allowing")
    relu = load_exercise(copy_exercise(allowing / "relu_backward", source=BASICS / "relu_backward"))
    forked = textwrap.dedent(
        """
        def _forked():
            child = os.fork()
            if child == 0:
                os._exit(0)
            os.waitpid(child, 0)
        """
    )
    source = _file(before="_forked()", prelude=forked).replace(
        "def relu_backward(dout, cache):\n", "def relu_backward(dout, cache):\n    _forked()\n"
    )
    path = write_source(tmp_path / "forks.py", source)
    (allowed, refused), workers = _graded_together([relu, exercises[1]], path, pool)
    assert workers == 4  # two groups, each an ordinary worker and an autograd check's
    assert allowed.passed, allowed
    assert not refused.passed and ONE_PROCESS in str(refused), refused


def test_the_python_api_grades_a_file_on_every_exercise_it_defines(honest: Path) -> None:
    """grader.grade_file(FOLDER, FILE): what `grader check FOLDER FILE` grades, as values."""
    results = grader.grade_file(BASICS, honest, seed=SEED, trials=TRIALS)
    assert sorted(r.exercise for r in results) == ["reciprocal", "relu_backward", "softplus"]
    assert all(r.passed for r in results)
