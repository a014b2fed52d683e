"""The pass the grader is reading from a worker: the trials still owed, in order, and what came back so
far; shared by the frame reader (reading.py), which fills it, and the deadlines (deadlines.py), which stop
it, neither of which imports the other's module for it."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.outcomes import Failure
from grader.sandbox.protocol import Run
from grader.sandbox.report import Overrun, Pass, Returns, TrialOutputs


@dataclass
class Reading:
    """The pass being read: the trials still owed, in order, and what came back so far.

    `closing`: no trial is owed, only the worker's last word on the exercise ("done"), read so that the
    worker may serve the next exercise.
    """

    run: Run
    pending: list[int]
    # The trials that returned, their arrays kept as columns per return (Pass.by_return), as they come.
    returned: dict[str, Returns] = field(default_factory=dict)
    outputs: TrialOutputs = field(init=False)
    failures: dict[int, Failure] = field(default_factory=dict)
    stopped: Failure | None = None
    overrun: Overrun | None = None  # when a trial's deadline stopped the pass
    torch_wanted: bool = False  # a worker without torch was asked for it (worker/imports.py)
    done: bool = False  # the worker said the pass is over
    closing: bool = False

    def __post_init__(self) -> None:
        self.outputs = TrialOutputs(self.returned)

    @property
    def over(self) -> bool:
        # A rerun is over at its last answer: the extended run's answers follow without a marker.
        if self.done or self.stopped is not None:
            return True
        return not self.closing and self.run is not Run.FIRST and not self.pending

    def current(self) -> int | None:
        return self.pending[0] if self.pending else None

    @property
    def answered(self) -> bool:
        return bool(self.outputs or self.failures)

    def result(self) -> Pass:
        returned = dict(self.returned)
        if self.run is Run.FIRST:
            return Pass(
                self.outputs, self.failures, self.stopped, self.overrun, self.torch_wanted, by_return=returned
            )
        # A rerun that ends early is no failure of the submission, whose first pass is complete: what it
        # says of its trial is kept, the rest were simply not rerun.
        stopped = self.stopped
        if stopped is not None and stopped.trial is not None:
            self.failures[stopped.trial] = stopped
        return Pass(self.outputs, self.failures, by_return=returned)
