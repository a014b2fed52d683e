"""Why a worker produced nothing more, in words a student can act on: pure functions of what was seen."""

from __future__ import annotations

import signal

from grader.exercise.spec import Limits
from grader.outcomes import Failure, FailureKind
from grader.sandbox.payload import Fatal
from grader.sandbox.protocol import CLOSED_CHANNEL_EXIT

OUTPUT_HARD_LIMIT = 32 << 20  # beyond this much printing the run is stopped, not just truncated


def timed_out(limits: Limits, imported: bool, whole_run_over: bool, trial: int | None) -> Failure:
    """A deadline passed: the import's, the whole run's, or the running trial's."""
    if not imported:
        return Failure(
            FailureKind.TIMEOUT,
            f"importing the submission took longer than {limits.import_seconds:g} s "
            "(is there a long loop at the top level of the file?)",
        )
    if whole_run_over:
        return Failure(
            FailureKind.TIMEOUT,
            f"all trials together took longer than {limits.submission_seconds:g} s",
            trial=trial,
        )
    return Failure(
        FailureKind.TIMEOUT,
        f"trial {trial} ran past its {limits.trial_seconds:g} s deadline "
        "and did not stop when asked (an infinite loop?)",
        trial=trial,
    )


def ended(code: int | None, trial: int | None) -> Failure:
    """The worker process ended before it said it was done; `code` is its exit status (negative: the
    signal that ended it), None if it could not be learnt."""
    where = f" during trial {trial}" if trial is not None else ""
    if code is not None and code < 0 and -code in signal.valid_signals():
        name = signal.Signals(-code).name
        if name == "SIGXCPU":
            return Failure(FailureKind.TIMEOUT, f"used up its CPU time limit{where}", trial=trial)
        return Failure(FailureKind.CRASH, f"the process was killed by {name}{where}", trial=trial)
    if code == CLOSED_CHANNEL_EXIT:
        message = (
            f"the process ended{where} unable to write its output (exit status 120): the code closed "
            "file descriptors, the grader's result channel among them"
        )
        return Failure(FailureKind.PROTOCOL, message, trial=trial)
    return Failure(
        FailureKind.EXIT,
        f"the process exited with status {code}{where} (os._exit or a crash in native code)",
        trial=trial,
    )


def printed_too_much(trial: int | None) -> Failure:
    limit = OUTPUT_HARD_LIMIT >> 20
    message = f"printed more than {limit} MiB; remove the prints from your function"
    return Failure(FailureKind.OUTPUT_LIMIT, message, trial=trial)


def corrupted(why: str, trial: int | None = None) -> Failure:
    return Failure(FailureKind.PROTOCOL, why, trial=trial)


def fatal(message: Fatal) -> Failure:
    """The worker's own word that the submission cannot run (it did not import, or lacks the entry)."""
    kind = FailureKind(message.kind)
    if kind is FailureKind.MISSING_FUNCTION:
        defined = ", ".join(message.defined) or "no functions"
        return Failure(kind, f"no function '{message.message}' is defined (found: {defined})")
    return Failure(kind, message.message, message.traceback)
