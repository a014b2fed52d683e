"""The only grader code that runs beside student code, in a process forked for it by the sandboxed zygote.

It reads the hand-in's job (its files and limits) from a pipe, sets its resource limits, then serves the
exercises the grader sends one after another: each names the calls to make and the trial inputs; the worker
imports the hand-in's files as the exercise needs them (once for all the exercises of a file), makes the
calls once per trial on fresh copies of the inputs, and sends back what they returned as plain numeric
arrays over a dedicated pipe. It never sees expected values: comparison happens in the grader's process.
Stdlib and numpy only (torch if present).

The pipe, in order: {"type": "handin"}; then per exercise {"type": "exercise"} and its trials' inputs,
answered by "ready", the first pass and "pass-done"; then {"type": "rerun"}, answered by the reruns and
"done". The end of the pipe ends the worker. A failure of the import ends it too (the grader starts a
fresh one for the exercises left): its modules are half made.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grader.sandbox import seeding
from grader.sandbox.protocol import Frame, Run, iter_frames
from grader.sandbox.worker import imports as course_imports
from grader.sandbox.worker import numerical_watch, plots, seccomp
from grader.sandbox.worker.autograd_check import install_checked_autograd
from grader.sandbox.worker.channel import Channel
from grader.sandbox.worker.deadline import DEADLINE
from grader.sandbox.worker.limits import apply_limits, exercise_cpu
from grader.sandbox.worker.loading import Importer, python2_names
from grader.sandbox.worker.trial import Reruns, run_reruns, run_trial


def prepare(torch: bool) -> None:
    """What every worker needs before its job, done once in the zygote that forks them; torch's part
    with `torch`, else by `prepare_torch` before the first job that needs it."""
    if torch:
        prepare_torch()
    course_imports.remember_folders()


def prepare_torch() -> None:
    """torch imported and warmed up, in the zygote: every worker it forks from then on has it."""
    with contextlib.suppress(ImportError):
        import torch

        torch.set_num_threads(1)  # before any work: torch's OpenMP runtime does not survive a fork otherwise
        _warm_up(torch)
    course_imports.remember_folders()  # after what the warm-up imported


def _warm_up(torch: Any) -> None:
    """Use what student code commonly uses, once: each forked worker would pay its first use again
    (torch sets up its dispatch and autograd paths lazily, on their first use). Only a saving: a torch on
    which it fails grades as well without it."""
    with contextlib.suppress(Exception):
        for dtype in (np.float64, np.float32):
            inputs = np.linspace(0.1, 1.0, 6, dtype=dtype).reshape(2, 3)
            leaf = torch.tensor(inputs, requires_grad=True)
            product = leaf @ torch.from_numpy(inputs.T.copy())
            hidden = torch.sigmoid(product + 1.0) * torch.tanh(product) - torch.relu(leaf).sum()
            loss = torch.exp(hidden).mean() + torch.log(hidden.abs() + 1.0).sum()
            (loss + torch.softmax(leaf, 1).max()).backward()
            (gradient,) = torch.autograd.grad((leaf * leaf).sum(), leaf)
            gradient.detach().numpy().copy()
            np.exp(inputs) @ inputs.T + np.tanh(inputs).sum(axis=1, keepdims=True)


def main(job_dir: Path, jobs_fd: int, results_fd: int, progress_fd: int) -> None:
    channel = Channel(results_fd, progress_fd)
    frames = iter_frames(jobs_fd)
    handin = next(frames).header
    apply_limits(handin["limits"])
    submission_dir = job_dir / "submission"
    os.chdir(job_dir / "scratch")
    sys.path.insert(0, str(submission_dir))
    sys.path.insert(0, str(job_dir / "support"))  # first: the course's util.py, not a student's copy
    if handin.get("checked"):
        # The checked worker (judging/provenance.py): autograd wrong on every route, before the submission
        # is imported and for the life of the process. The ordinary worker has none of it. A worker
        # without torch cannot import it (its view lacks it): nothing to make wrong.
        if handin["torch"] or "torch" in sys.modules:
            install_checked_autograd()
        if handin["refuse_numerical"]:
            numerical_watch.install(submission_dir)
    python2_names()
    plots.headless(job_dir / "support", job_dir / "scratch")
    # First on sys.meta_path: a refused import prepares nothing for it.
    view = handin["view"]
    course_imports.install(
        handin["modules"], submission_dir, job_dir / "support", view["folders"], view["hidden"]
    )
    if handin["one_process"]:
        # Last before the import: the worker's own set-up above may still start what it needs. The
        # grader's probe found that the filter holds here: a hand-in is never run without it.
        why = seccomp.forbid_new_processes()
        if why is not None:
            raise RuntimeError(f"the grader could not hold this hand-in to one process: {why}")
    importer = Importer(submission_dir, handin["files"], handin["cells"])
    for frame in frames:
        if not _exercise(channel, frames, frame.header, importer, submission_dir):
            return


def _exercise(
    channel: Channel, frames: Iterator[Frame], job: dict[str, Any], importer: Importer, submission_dir: Path
) -> bool:
    """Serve one exercise: whether the worker may serve another."""
    inputs_by_trial: dict[int, dict[str, np.ndarray]] = {}
    while len(inputs_by_trial) < job["trial_count"]:
        frame = next(frames)  # the grader's: runner._encode_trials, an input per column
        names = frame.header["names"]
        by_input = [column.arrays() for column in frame.columns]
        for index, *arrays in zip(frame.header["trials"], *by_input, strict=True):
            inputs_by_trial[index] = dict(zip(names, arrays, strict=True))
    exercise_cpu(job["cpu_seconds"])
    # The exercise's seed, before what it imports: a file imported for an earlier exercise drew from that
    # one's (as module state, shared by the exercises of one file).
    seeding.seed_randomness(job["seed"], None)
    loaded = importer.functions(channel, [c["entry"] for c in job["calls"]])
    if loaded is None:
        return False
    functions, skipped = loaded
    DEADLINE.watch(job["deadlines"], channel.note_cpu)
    ready = {
        "type": "ready",
        "import_seconds": round(importer.seconds, 6),
        "skipped_imports": skipped,
        "failed_cells": importer.failed_cells[:20],
        "job": job["job"],
    }
    channel.send(ready)
    # A worker that confirms an earlier one's timeout runs only some trials; it holds every trial's
    # inputs all the same, since the grader may ask it to rerun any of them.
    first_pass = job["first_pass"] if job["first_pass"] is not None else list(inputs_by_trial)
    for index in first_pass:
        channel.starting(index)
        run_trial(channel, functions, index, inputs_by_trial[index], job, submission_dir, Run.FIRST)
        wanted = course_imports.torch_wanted()
        if wanted is not None:  # the grader runs the hand-in again with torch: nothing more here
            channel.send(wanted)
            return False
    # Second pass, on the grader's request: the trials it found wrong beyond rounding, run again above
    # the precision they were computed in, to tell an unstable formula (its error shrinks with the
    # precision) from a mistake (wrong at any): at float64, then the probes (new inputs: an input moved a
    # little), then numpy's extended precision for code that computed in float64 already.
    channel.send({"type": "pass-done"})
    request = next(frames, None)
    if request is None:
        channel.send({"type": "done"})
        return False
    arrays = iter(request.arrays)
    probes = {index: {n: next(arrays) for n in names} for index, names in request.header["probes"]}
    header = request.header
    first = {index: tuple(s if s is None else tuple(s) for s in shapes) for index, shapes in header["shapes"]}
    reruns = Reruns(header["trials"], probes, header["extended"], first, header["again"])
    run_reruns(channel, functions, inputs_by_trial, reruns, job, submission_dir)
    channel.send({"type": "done"})
    return True
