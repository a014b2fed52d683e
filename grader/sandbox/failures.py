"""Why a worker produced nothing more, in words a student can act on: pure functions of what was seen.

Each says where (the trial), what (the numbers measured, and what was allowed), the likely cause, the fix.
"""

from __future__ import annotations

import signal

from grader.exercise.spec import WALL_CAP_FACTOR, Limits
from grader.outcomes import Failure, FailureKind, Location
from grader.sandbox.payload import Fatal, located
from grader.sandbox.protocol import CLOSED_CHANNEL_EXIT
from grader.sandbox.report import Overrun
from grader.text import counted

OUTPUT_HARD_LIMIT = 32 << 20  # beyond this much printing the run is stopped, not just truncated


def import_timed_out(limits: Limits) -> Failure:
    return Failure(
        FailureKind.TIMEOUT,
        f"importing the submission took longer than {limits.import_seconds:g} s "
        "(is there a long loop at the top level of the file?)",
    )


def run_timed_out(limits: Limits, trial: int | None) -> Failure:
    where = f" (stopped in trial {trial})" if trial is not None else ""
    return Failure(
        FailureKind.TIMEOUT,
        f"all trials together took longer than {limits.submission_seconds:g} s{where}: make each call faster",
        trial=trial,
    )


def overran(overrun: Overrun, traceback: str = "", location: Location | None = None) -> Failure:
    """A call past its deadline, seen once: where, what (CPU used and allowed), the likely cause, the fix."""
    used = _used(overrun, f"{overrun.cpu_seconds:.2f} s of CPU")
    message = f"trial {overrun.trial} ran past {_deadline(overrun)} ({used}; {_cause_and_fix(overrun)}"
    return Failure(FailureKind.TIMEOUT, message, traceback, overrun.trial, location)


def overran_twice(
    first: Overrun, second: Overrun, traceback: str = "", location: Location | None = None
) -> Failure:
    """A call past its deadline again when run in a fresh worker: not the machine's load."""
    trial, why = second.trial, _cause_and_fix(second)
    if (first.deadline, first.allowed, first.stopped) == (second.deadline, second.allowed, second.stopped):
        both = f"{first.cpu_seconds:.2f} s of CPU, then {second.cpu_seconds:.2f} s in a fresh run"
        message = f"trial {trial} ran past {_deadline(second)} twice ({_used(second, both)}; {why}"
    else:
        once = f"{_deadline(first)} ({_used(first, f'{first.cpu_seconds:.2f} s of CPU')})"
        again = f"{_deadline(second)} ({_used(second, f'{second.cpu_seconds:.2f} s of CPU')}"
        message = f"trial {trial} ran past {once}, then in a fresh run past {again}; {why}"
    return Failure(FailureKind.TIMEOUT, message, traceback, trial, location)


def _deadline(overrun: Overrun) -> str:
    cpu = f"{overrun.allowed:g} s CPU deadline"
    if overrun.first_call:
        cpu += " for the first call after the import"
    if overrun.deadline == "cpu":
        return f"its {cpu}"
    cap = f"its {WALL_CAP_FACTOR * overrun.allowed:g} s wall-clock cap ({WALL_CAP_FACTOR:g} × its {cpu})"
    return cap if overrun.stopped else f"{cap} and did not stop when asked"


def _used(overrun: Overrun, seconds: str) -> str:
    if overrun.deadline == "cpu":
        return f"used {seconds}"
    if overrun.stopped:
        return f"used only {seconds}"
    return f"used at least {seconds}"  # noted by the worker at its last check, which native code skips


def _cause_and_fix(overrun: Overrun) -> str:
    """The end of a message whose parenthesis is open: the likely cause, closing it, then the fix."""
    if overrun.deadline == "cpu":
        cause, fix = "an infinite loop?", "make sure every loop ends, or do less work per call"
    elif overrun.stopped:
        cause, fix = "waiting, not computing: time.sleep, a lock, a child process?", "remove the wait"
    else:
        cause = "native code that never returns, or an `except` that catches the grader's timeout?"
        fix = "let every loop end, and do not catch BaseException"
    return f"{cause}): {fix}"


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


def out_of_memory(memory_mb: int, held: int | None, trial: int | None) -> Failure:
    """The hand-in's processes together passed the exercise's memory limit, and the kernel ended one;
    `held`: the most they held together, in bytes, where the cgroup can tell."""
    where = f" in trial {trial}" if trial is not None else ""
    measured = f"; they held {held >> 20} MB at the most" if held is not None else ""
    message = (
        f"needed more memory than the {memory_mb} MB allowed{where}, all its processes together (the "
        f"kernel ended one of them{measured}): arrays far larger than the inputs, kept across calls, or "
        "child processes each holding their own copies? Compute on arrays of the inputs' sizes, in one "
        "process"
    )
    return Failure(FailureKind.MEMORY, message, trial=trial)


def returned_too_much(sent: int, budget: int, trials: int, trial: int | None) -> Failure:
    """The hand-in's results, all trials together, passed what the grader keeps for one hand-in."""
    where = f"by trial {trial}" if trial is not None else "in all"
    message = (
        f"the returns sent {sent >> 20} MiB {where} ({counted(trials, 'trial')} answered), more than the "
        f"{budget >> 20} MiB the grader keeps for one hand-in's returns over all its trials: the arrays "
        "returned are far larger than the exercise's; return only the values asked for, of the shapes asked"
    )
    return Failure(FailureKind.MEMORY, message, trial=trial)


def corrupted(why: str, trial: int | None = None) -> Failure:
    return Failure(FailureKind.PROTOCOL, why, trial=trial)


def fatal(message: Fatal) -> Failure:
    """The worker's own word that the submission cannot run (it did not import, or lacks the entry)."""
    kind = FailureKind(message.kind)
    if kind is FailureKind.MISSING_FUNCTION:
        defined = ", ".join(message.defined) or "no functions"
        return Failure(kind, f"no function '{message.message}' is defined (found: {defined})")
    return Failure(kind, message.message, message.traceback, location=located(message.location))
