"""What the commands share: exercises loaded, the run's settings (its seed, and the reference cache's
place), the gradebook's path, the class report's ending.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from grader.errors import GraderError, SpecError, UsageError
from grader.exercise.settings import ReferenceCache, Settings
from grader.exercise.spec import SPEC_FILE, Exercise, discover_exercises, load_exercise
from grader.exercise.trials import secret_seed
from grader.report.terminal import safe
from grader.results import SubmissionResult
from grader.text import counted, plural

if TYPE_CHECKING:
    from grader.report.roster import Roster


def warn_if_reduced(errors: Console) -> None:
    from grader.sandbox import isolation

    if isolation.current().reduced:
        errors.print(f"[yellow]{safe(isolation.current().description)}[/]")


def run_settings(args: argparse.Namespace, drawn: int | None = None, pool: Path | None = None) -> Settings:
    """A grading command's settings, resolved once, from its arguments (--seed, --trials, --trial where it
    has them) and the environment (the reference cache's). With no --seed, a secret seed: `drawn` (from
    a seed pool), else drawn now for the whole run. References are kept in `pool`'s folder where it is
    named; else nowhere for a secret seed, which no later run draws again (each run would leave its
    references in the cache for good: cs231n/a2, 12 files, 17 MB a run); else in the user's cache."""
    secret = args.seed is None
    seed = int(args.seed) if not secret else drawn if drawn is not None else secret_seed()
    cache = ReferenceCache.from_environment()
    cache = cache.at(pool) if pool is not None else cache.off() if secret else cache
    trials, only = getattr(args, "trials", None), getattr(args, "trial", None)
    return Settings(seed, trials, only, secret=secret, cache=cache)


def seed_note(settings: Settings) -> str:
    seed = settings.seed
    if not settings.secret:
        return f"seed {seed}"
    return (
        f"seed {seed} (secret, drawn for this run: the hand-ins graded now were graded with it, unchanged "
        f"ones keep the seed in their result; replay a trial with grader repro EXERCISE FILE --seed {seed} "
        "--trial T)"
    )


def submissions_folder(args: argparse.Namespace) -> Path:
    return Path(args.submissions or args.exercises.resolve().parent / "submissions")


def gradebook_path(args: argparse.Namespace, submissions: Path, errors: Console) -> Path:
    from grader.gradebook import SHARED_NAME, default_path

    if args.gradebook is not None:
        return Path(args.gradebook)
    path = default_path(submissions)
    shared = path.parent / SHARED_NAME
    if shared.is_file() and not path.exists():
        errors.print(
            f"[yellow]note: {safe(str(shared))} is the gradebook grader 0.2 shared among every class "
            f"beside {safe(str(path.parent))}; this class's is {safe(str(path))} now (--gradebook "
            f"{safe(str(shared))} to keep using the old one)[/]"
        )
    return path


@contextlib.contextmanager
def progress(errors: Console, total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """A progress bar with counts and ETA on a terminal's stderr; nothing elsewhere."""
    if not (enabled and errors.is_terminal):
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=errors, transient=True) as bar:
        task = bar.add_task("grading", total=total)
        yield lambda: bar.advance(task)


def load_all(
    folder: Path, errors: Console, authoring: bool = False
) -> tuple[list[Exercise], list[GraderError]]:
    folders = discover_exercises(folder)
    if not folders:
        raise UsageError(f"{folder}: no exercises here (an exercise is a folder holding exercise.yaml)")
    loaded: list[Exercise] = []
    broken: list[GraderError] = []
    for path in folders:
        try:
            exercise = load_exercise(path, authoring)
            first = next((e for e in loaded if e.id == exercise.id), None)
            if first is not None:  # grades are kept by id: two exercises with one id would mix them
                message = f"this id is already the id of {first.root / SPEC_FILE}; give each exercise its own"
                raise SpecError(
                    exercise.root / SPEC_FILE, _id_line(exercise), "id", f"'{exercise.id}': {message}"
                )
            loaded.append(exercise)
        except SpecError as exc:
            broken.append(exc)
            errors.print(f"[bold red]spec error:[/] {safe(str(exc))} — this exercise is skipped")
    return loaded, broken


def _id_line(exercise: Exercise) -> int | None:
    lines = (exercise.root / SPEC_FILE).read_text(encoding="utf-8").splitlines()
    return next((number for number, line in enumerate(lines, 1) if line.startswith("id:")), None)


def roster_of(args: argparse.Namespace) -> Roster | None:
    from grader.report.roster import load_roster

    return None if args.roster is None else load_roster(args.roster)


def finish(
    args: argparse.Namespace,
    console: Console,
    errors: Console,
    results: list[SubmissionResult],
    exercises: list[str],
    students: list[str],
    roster: Roster | None,
    graded_at: dict[tuple[str, str], str],
) -> None:
    from grader.report.exports import write_all
    from grader.report.terminal import render_class

    if roster is not None:
        # The roster's students first, in its order (those without a folder too: they are missing, not
        # absent from the class), then the folders it does not name, which are kept and reported.
        unknown = roster.not_on_roster(students)
        students = [*roster.folders(), *unknown]
    if not args.json:
        render_class(console, results, exercises, students)
    if roster is not None:
        graded = {r.student for r in results}
        no_folder = [s for s in roster.folders() if s not in graded]
        if no_folder:
            errors.print(
                f"[yellow]{counted(len(no_folder), 'student')} of the roster "
                f"{plural(len(no_folder), 'has')} no folder: "
                f"{safe(', '.join(no_folder))} — not handed in (empty cells, never 0)[/]"
            )
        if unknown:
            errors.print(
                f"[yellow]{safe(str(roster.path))}: {counted(len(unknown), 'folder')} "
                f"{plural(len(unknown), 'is')} "
                f"not on the roster: {safe(', '.join(unknown))} — in gradebook.csv but not in canvas.csv or "
                "moodle.csv; add them to the roster (folder,id,...) to export their grades[/]"
            )
    if args.out is not None:
        written = write_all(
            args.out,
            results,
            exercises,
            students,
            roster=roster,
            per_return=args.per_return,
            graded_at=graded_at,
        )
        # on stderr: with --json, stdout holds JSON lines only
        errors.print(f"[dim]wrote {counted(len(written), 'file')} to {safe(str(args.out))}[/]")
    if args.html is not None:
        from grader.report.html import INDEX, write_site

        pages = write_site(args.html, results, exercises, students)
        errors.print(f"[dim]wrote {counted(len(pages), 'page')} to {safe(str(args.html))} (open {INDEX})[/]")
