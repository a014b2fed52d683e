"""`grader validate`, `grader handout` and `grader new`: what an instructor writing exercises runs."""

from __future__ import annotations

import argparse

from rich.console import Console

from grader.commands.common import load_all
from grader.commands.outcome import Outcome
from grader.errors import GraderError
from grader.exercise.settings import ReferenceCache
from grader.report.terminal import safe
from grader.text import counted


def validate(args: argparse.Namespace, console: Console, errors: Console) -> Outcome:
    from grader.validation import validate as checks_of

    exercises, broken = load_all(args.exercises, errors, authoring=True)
    passed: list[bool] = []
    for exercise in exercises:
        console.print(f"[bold]{safe(exercise.id)}[/] — {safe(exercise.spec.title)}")
        try:
            checks = checks_of(exercise, args.seed, args.trials, jobs=args.jobs)
        except GraderError as exc:  # a graph that fails on its own inputs: the other exercises still run
            console.print(f"  [bold red]FAIL[/] {safe(str(exc))}")
            broken.append(exc)
            continue
        for check in checks:
            mark = "[green]ok[/]  " if check.ok else "[bold red]FAIL[/]"
            console.print(f"  {mark} {safe(check.name)}: {safe(check.detail)}")
            passed.append(check.ok)
    return Outcome.of(passed, broken=bool(broken))


def handout(args: argparse.Namespace, console: Console) -> Outcome:
    from grader.handout import README, write_handout

    cache = ReferenceCache.from_environment() if args.references else None
    written = write_handout(args.exercises, args.out, cache)
    for exercise in written.exercises:
        where = exercise.folder if exercise.checkable else f"{exercise.starter} (graded by the course only)"
        unshipped = cache is not None and exercise.checkable and exercise.references is None
        note = (
            " (no references: its graph fails on its own inputs; grader validate says why)"
            if unshipped
            else ""
        )
        console.print(f"  {safe(exercise.id)}: {safe(str(where))}{note}")
    only = sum(not e.checkable for e in written.exercises)
    console.print(
        f"wrote {written.files} files to {safe(str(args.out))}: {len(written.exercises)} exercises"
        + (
            f" ({only} graded by the course only: their expected values come from reference code)"
            if only
            else ""
        )
        + "; no solution, reference or known-wrong file among them (each compared, by name and content)"
    )
    shipped = [args.out / e.references for e in written.exercises if e.references is not None]
    if shipped:
        megabytes = sum(path.stat().st_size for path in shipped) / 1e6
        console.print(
            f"With the references of grader check's default trials for {counted(len(shipped), 'exercise')} "
            f"({megabytes:.1f} MB): a student's first check computes none (--no-references leaves them out)"
        )
    console.print(f"Students start with {safe(str(args.out / README))}: how to install and check their work")
    return Outcome.PASSED


def new(args: argparse.Namespace, console: Console) -> Outcome:
    from grader import scaffold

    folder = args.dir / args.id
    for path in scaffold.create(folder):
        console.print(f"  created {safe(str(path))}")
    console.print(
        f'Next: edit {safe(str(folder / "exercise.yaml"))} (the README\'s "Writing an exercise" explains '
        "every field), the solution, the starter and the wrong/ files; then run:"
    )
    console.print(f"  [bold]grader validate {safe(str(folder))}[/]", soft_wrap=True)
    return Outcome.PASSED
