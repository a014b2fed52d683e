"""Run one hand-in's exercises in its worker process, one after another, and read back what each returned.

The worker is forked for the hand-in alone by a warm zygote (warm.py) under the current isolation
(process.py): stdin from /dev/null, a clean environment, a scratch folder as cwd, the hand-in's files
read-only beside it, resource limits set before student code runs, deadlines enforced from outside
(deadlines.py), results over a dedicated pipe (never stdout, reading.py), and student output captured with
a cap. A hand-in is imported once for all the exercises its files are graded on (`HandinWorker`): the
exercises of one student need no walls between them, students do. An exercise that leaves the worker in a
state the grader cannot vouch for (a pass stopped early: a crash, a deadline, a corrupted frame, a frame
between exercises) ends it, and the next exercise gets a fresh one, which imports the files again.

Per exercise (`RunningWorker`), two steps, each returning a value: `first_pass()` reads every trial's
result; `rerun(request)` asks for the reruns the grader chose from that first pass and reads them.
Wording what went wrong is failures.py's.

A first pass stopped by a trial's deadline says so (`Pass.overrun`); a worker started `after=` that
report runs the trials on from there in a fresh process (after calling the first trial again, to pay the
lazy imports as the earlier one had), and its first pass is the whole first pass: the timeout confirmed
if the same trial overruns again, gone if not.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from grader.exercise.spec import WALL_CAP_FACTOR, Exercise
from grader.exercise.trials import Trial
from grader.handin.prepare import Prepared
from grader.memo import PerObject
from grader.sandbox import cpu_watch, failures, torch_use, warm
from grader.sandbox.deadlines import Deadlines
from grader.sandbox.pass_state import Reading
from grader.sandbox.process import Capture, WorkerProcess
from grader.sandbox.protocol import ColumnWriter, Run, encode, encode_wire, little_endian
from grader.sandbox.reading import FrameReader
from grader.sandbox.report import Overrun, Pass, RerunRequest, Returned, WorkerReport, returned_shapes


class HandinWorker:
    """One hand-in's worker process, serving the exercises its files are graded on one after another:
    the files imported once. Where an exercise leaves the process unfit to serve on (or a trial's deadline
    asks for a fresh one), the next exercise starts a fresh process, which imports the files again.

    The exercises must share their limits of a process (memory, files, processes) and their support files:
    grading.py groups a hand-in's exercises so. Always `close()` it.
    """

    def __init__(
        self,
        handin: Prepared,
        exercises: Sequence[Exercise],
        pool: warm.WorkerPool | None = None,
        checked: bool = False,
    ) -> None:
        """Starts nothing yet: the first exercise's `start` does (a zygote may still be importing torch
        while the caller prepares that exercise's trials and references). `checked`: the autograd check's
        worker (judging/provenance.py), sent only the checked trials."""
        self._handin = handin
        self._checked = checked
        self._exercises = list(exercises)
        self._pool = pool
        self._process: WorkerProcess | None = None
        self.processes = 0  # how many it started: 1 where no exercise ended one

    def start(
        self, exercise: Exercise, inputs_as: str | None, seed: int, after: WorkerReport | None = None
    ) -> RunningWorker:
        """`exercise` on the hand-in's process: the running one where it may serve on (and `after` is
        None), else a fresh one. The arguments are RunningWorker's."""
        process = self._process
        if process is not None and (after is not None or not process.usable):
            process.close()
            process = self._process = None
        if process is None:
            # The CPU of every exercise it may serve from here on (the worker's hard limit).
            at = next((n for n, e in enumerate(self._exercises) if e is exercise), len(self._exercises))
            left = [exercise, *self._exercises[at + 1 :]]
            cpu = sum(e.spec.limits.import_seconds + e.spec.limits.submission_seconds for e in left)
            torch = torch_use.needed(self._handin, left)
            process = WorkerProcess(self._handin, exercise, cpu, self._pool, self._checked, torch)
            self._process = process
            self.processes += 1
        return RunningWorker(exercise, self._handin, inputs_as, seed=seed, after=after, process=process)

    def close(self) -> None:
        """Kill the process, if one runs, and everything it started; safe to call again."""
        if self._process is not None:
            self._process.close()
            self._process = None


class RunningWorker:
    """One exercise on a started worker: the exercise's job, its deadlines and its read loop.

    Always `close()` it: on a process of its own, that kills the worker and everything it started and
    cleans its folder; on a hand-in's (`process=`), it leaves the process to the next exercise where this
    one ended cleanly, and kills it otherwise.
    """

    def __init__(
        self,
        exercise: Exercise,
        handin: Prepared,
        inputs_as: str | None = None,
        pool: warm.WorkerPool | None = None,
        seed: int = 0,
        after: WorkerReport | None = None,
        process: WorkerProcess | None = None,
        checked: bool = False,
    ) -> None:
        """Start the worker at once, unless `process` (a HandinWorker's) runs already.

        `inputs_as` ("float32") hands the code its float inputs in that dtype instead of float64;
        `seed` (trials.student_seed) seeds the student's own randomness. `after`: the report of a worker
        whose first pass a trial's deadline stopped (`Pass.overrun`); this one runs the trials on from
        that one, once more, to tell the machine's load from code that never ends (on a fresh process).
        `checked`: a process of its own for the autograd check (judging/provenance.py).
        """
        limits = exercise.spec.limits
        self._own = process is None
        if process is None:
            cpu = limits.import_seconds + limits.submission_seconds
            torch = torch_use.needed(handin, [exercise])
            process = WorkerProcess(handin, exercise, cpu, pool, checked, torch)
        # An exercise after the first on its process begins when it is sent (`send`): the worker waits
        # idle until then, while the grader computes the exercise's references, say.
        self._later = process.begin_exercise()
        self._process = process
        self._exercise = exercise
        self._inputs_as = inputs_as
        self._seed = seed
        self._earlier = after
        self._kept = after.first.before_overrun() if after is not None else Pass()
        self._limits = limits
        self._order: list[int] = []
        self._first: Pass | None = None
        self._deadlines = Deadlines(process, limits, process.started, process.cpu_at_start)
        kept = limits.output_kb << 10
        imported = process.import_output or {}
        captures = {
            fd: Capture(kept, bytearray(imported[fd].data[:kept]), imported[fd].total)
            if fd in imported
            else Capture(kept)
            for fd in (process.stdout, process.stderr)
        }
        # Bytes read from the result channel, all passes together (RETURNS_BUDGET_BYTES); after an earlier
        # worker, what this one keeps of it counts too: the budget is the hand-in's, not a worker's.
        earlier = self._kept.outputs.values()
        received = sum(r.array.nbytes for o in earlier for r in o.by_name.values() if isinstance(r, Returned))
        self._reader = FrameReader(process, exercise, self._deadlines, captures, received)

    def send(self, trials: Sequence[Trial]) -> None:
        """Hand the trials to the worker (written by a thread where the pipe cannot take them at once).

        After an earlier worker (`after`), the same trials: this one runs those it did not answer, after
        the first it did: the first call pays the lazy imports again, and the call that overran is judged
        under the deadline it had then."""
        order = [t.index for t in trials]
        skipped = self._skipped
        self._order = self._deadlines.order = [order[0], *order[skipped:]] if skipped else order
        if self._later:
            self._process.forget_progress()
            self._deadlines.begin(time.monotonic(), cpu_watch.CpuWatch(self._process.cpu_source))
        self._process.write(self._job_bytes(trials))

    @property
    def _skipped(self) -> int:
        """How many trials, in order, an earlier worker answered before the one that overran."""
        return len(self._kept.outputs) + len(self._kept.failures)

    def first_pass(self) -> Pass:
        """Every trial's result, under the deadlines; `stopped` says why the pass ended early, if it did.

        After an earlier worker, the results of both: a timeout confirmed where the same trial overran
        again."""
        reading = Reading(Run.FIRST, pending=list(self._order))
        self._reader.read(reading)
        self._first = reading.result()
        if self._earlier is not None and self._earlier.first.overrun is not None:
            self._first = _ran_on(self._kept, self._earlier.first.overrun, self._first)
        return self._first

    def rerun(self, request: RerunRequest) -> WorkerReport:
        """Run `request` (trials again at float64, probes, trials again in extended precision) after a
        complete first pass; the report of every pass. After a first
        pass that stopped early, nothing more runs; after a rerun that did, nothing more of it."""
        first = self._first if self._first is not None else self.first_pass()
        passes: dict[Run, Pass] = {}
        reader = self._reader
        if first.stopped is None and not reader.finished:
            self._request(request, first)
            owed = {
                Run.AGAIN: list(request.again),
                Run.FLOAT64: [*request.trials, *(p.index for p in request.probes)],
                Run.EXTENDED: list(request.extended),
            }
            for run, pending in owed.items():  # in the worker's order; after one stops, nothing more
                reading = Reading(run, pending)
                reader.read(reading)
                passes[run] = reading.result()
                if reading.stopped is not None:
                    break
            if not self._own and not reader.stopped and not reader.finished:
                # Its last word on the exercise, read so that it may serve the next (unless it came with the
                # last answers): anything else is the hand-in's own, and ends the process.
                reader.read(Reading(Run.EXTENDED, [], closing=True))
        return self._report(first, passes)

    def report(self) -> WorkerReport:
        """What the worker ran so far, asking it for nothing more: after a first pass that stopped early,
        all there is (the `after` of a worker that carries on from it)."""
        return self._report(self._first if self._first is not None else self.first_pass(), {})

    def _report(self, first: Pass, passes: Mapping[Run, Pass]) -> WorkerReport:
        captures = self._reader.captures
        self._process.drain_output(captures)
        stdout, stderr = captures[self._process.stdout], captures[self._process.stderr]
        report = WorkerReport(
            first=first,
            reruns=passes.get(Run.FLOAT64, Pass()),
            extended=passes.get(Run.EXTENDED, Pass()),
            again=passes.get(Run.AGAIN, Pass()),
            stdout=stdout.text(),
            stderr=stderr.text(),
            output_bytes=stdout.total + stderr.total,
            seconds=time.monotonic() - self._deadlines.started,
            import_seconds=self._reader.import_seconds,
            skipped_imports=self._reader.skipped_imports,
            failed_cells=self._reader.failed_cells,
            isolation=self._process.isolation,
        )
        return report if self._earlier is None else report.after(self._earlier)

    def close(self) -> None:
        """Done with the exercise: the process is killed (with everything it started, and its files
        removed) unless it is a hand-in's that may serve the next exercise; safe to call again."""
        process = self._process
        if process.closed:
            return
        reader = self._reader
        if self._own or not (reader.finished and not reader.stopped and process.usable and process.clean()):
            process.close()
            return
        process.emptied()  # it read the whole job before its last word

    # --- the job --------------------------------------------------------------------------------------

    def _job_bytes(self, trials: Sequence[Trial]) -> bytes:
        limits = self._limits
        job = {
            "type": "exercise",
            "job": self._reader.job,
            **calls_job(self._exercise, self._inputs_as, self._seed),
            "trial_count": len(trials),
            "first_pass": None if self._earlier is None else self._order,  # None: every trial, in order
            "deadlines": {
                "trial_seconds": limits.trial_seconds,
                "first_call_seconds": limits.first_call_cpu_seconds,
                "wall_cap_factor": WALL_CAP_FACTOR,
            },
            "cpu_seconds": limits.import_seconds + limits.submission_seconds,
            "limits": {"memory_mb": limits.memory_mb},  # named in a MemoryError's message
        }
        return encode(job) + _encoded_trials(trials)

    def _request(self, request: RerunRequest, first: Pass) -> None:
        header = {
            "type": "rerun",
            "trials": list(request.trials),
            "extended": list(request.extended),
            "again": list(request.again),
            "probes": [[p.index, list(p.inputs)] for p in request.probes],
            "shapes": returned_shapes(first, request),
        }
        arrays = [array for p in request.probes for array in p.inputs.values()]
        self._process.write_now(encode(header, arrays))
        if self._own:  # its last exercise: the end of the pipe tells it so
            self._process.close_jobs()
        # The worker has waited for this since its last frame: its first rerun's wall-clock cap starts now,
        # not while the grader was planning the reruns.
        self._deadlines.last_frame = time.monotonic()


def _ran_on(kept: Pass, overrun: Overrun, later: Pass) -> Pass:
    """The first pass of a worker that ran on from where an earlier one overran a deadline: the earlier
    results before that trial, this worker's from it on (what it says of the trial it called first again
    is left out). The same trial overrunning again is a confirmed timeout; anything else is what this
    worker saw. Never confirmed again: the pass has no overrun."""
    answered = kept.outputs.keys() | kept.failures.keys()
    outputs = {**kept.outputs, **{i: o for i, o in later.outputs.items() if i not in answered}}
    found = {**kept.failures, **{i: f for i, f in later.failures.items() if i not in answered}}
    stopped = later.stopped
    again = later.overrun
    if again is not None and again.trial == overrun.trial and stopped is not None:
        stopped = failures.overran_twice(overrun, again, stopped.traceback, stopped.location)
        if again.trial in found:
            found[again.trial] = stopped
    return Pass(outputs, found, stopped)


def calls_job(exercise: Exercise, inputs_as: str | None, seed: int) -> dict[str, Any]:
    """What the worker's trials read of its job (but its limits): the calls and their returns, how the
    inputs are handed, the student's seed. Shared with the in-process runner (in_process.py)."""
    spec = exercise.spec
    return {
        "calls": exercise.wire_calls(),
        "returns": list(exercise.return_names),
        "inputs_as": inputs_as,
        # Inputs handed out otherwise than as float64 numpy arrays: name -> {type, dtype}.
        "handed": {
            **{
                name: {"type": s.type, "dtype": s.dtype}
                for name, s in spec.inputs.items()
                if (s.type, s.dtype) != ("numpy", "float64")
            },
            **{name: {"type": "python", "dtype": "float64"} for name in exercise.sizes_handed},
        },
        "seed": seed,
    }


_TRIALS_PER_FRAME = 200
# Enough for every exercise a class is graded on at once: a course's file defines up to a dozen (CS231n
# A2's layers.py: 12), and at 8 each student's twelfth exercise had pushed out the first, so that every
# hand-in encoded every exercise's trials again (6 MB for A2's 10,500 trials, 0.06 s of CPU each time).
_encoded: PerObject[bytes] = PerObject(kept=64)


def _encoded_trials(trials: Sequence[Trial]) -> bytes:
    """The trials' frames, encoded once for every submission graded on the same trials (a class)."""
    return _encoded.get(trials, None, lambda: _encode_trials(trials))


def _encode_trials(trials: Sequence[Trial]) -> bytes:
    """Frames of up to _TRIALS_PER_FRAME trials whose inputs have the same names, dtypes and numbers of
    dimensions, each input a column: its arrays' shapes and entries end to end (protocol.ColumnWriter),
    which the worker checks and splits as whole arrays at once. One described array per input and trial
    took the worker 8 µs a trial to read (A2's 10,500 trials: 0.09 s of each hand-in's CPU)."""
    parts = []
    start = 0
    while start < len(trials):  # a frame per trial would cost more to read
        layout = _layout(trials[start])
        end = start + 1
        while end < min(len(trials), start + _TRIALS_PER_FRAME) and _layout(trials[end]) == layout:
            end += 1
        columns = [ColumnWriter(wire, ndim) for _, wire, ndim in layout]
        for trial in trials[start:end]:
            for column, array in zip(columns, trial.inputs.values(), strict=True):
                column.append(little_endian(array)[1])
        names = [name for name, _, _ in layout]
        header = {"type": "inputs", "trials": [t.index for t in trials[start:end]], "names": names}
        parts.append(encode_wire(header, [], columns))
        start = end
    return b"".join(parts)


def _layout(trial: Trial) -> list[tuple[str, str, int]]:
    """A trial's inputs as columns hold them: name, wire dtype, number of dimensions."""
    return [(name, little_endian(array)[0], array.ndim) for name, array in trial.inputs.items()]
