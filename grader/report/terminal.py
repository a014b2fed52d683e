"""Human-readable reports. rich renders the tables and colours and degrades to plain text in pipes."""

from __future__ import annotations

import textwrap
import weakref
from collections.abc import Sequence

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader.exercise.trials import Trial
from grader.outcomes import Verdict
from grader.report.common import (
    ENVELOPE_MEANING,
    REPLAY_LABEL,
    STYLE,
    error_summary,
    file_choice_note,
    focus_trial,
    grid,
    mistake_label,
    not_submitted,
    number,
    shows_failure,
    sizes_text,
    summary_message,
)
from grader.results import NotebookUse, ReturnResult, SubmissionResult
from grader.text import counted, visible

_EXPLAINED: weakref.WeakSet[Console] = weakref.WeakSet()


def safe(text: str) -> str:
    """Any text for rich to print as it is: much of it came from student code (see grader/text.py)."""
    return escape(visible(text))


def verdict_text(verdict: Verdict) -> str:
    return f"[{STYLE[verdict]}]{verdict.value}[/]"


def make_console(stderr: bool = False) -> Console:
    """A console that keeps reports readable in pipes and CI logs too (rich assumes 80 columns there)."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 120
    # emoji=False: a student's ":x:" or ":thumbs_up:" is text, never a picture that changes what it says.
    return Console(stderr=stderr, highlight=False, width=width, emoji=False)


def render_result(
    console: Console,
    result: SubmissionResult,
    show_output: bool = False,
    output_hint: str = "--show-output shows them",
) -> None:
    only = result.only_trial
    trials = f"trial {only}" if only is not None else counted(result.trials, "trial")
    console.print(
        f"[bold]{safe(result.exercise)}[/] — {safe(result.submission)}  "
        f"[dim](seed {result.seed}, {trials}, {result.seconds:.1f} s)[/]"
    )
    if result.error is not None:
        error = result.error
        console.print(f"  [bold red]error[/] ({error.kind}): {safe(error_summary(result))}")
        if error.traceback:
            console.print(_indent(safe(error.traceback), 4))
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2, 0, 2))
    table.add_column("return")
    table.add_column("verdict")
    table.add_column("points", justify="right")
    table.add_column("why")
    for ret in result.returns:
        why = summary_message(ret, result)
        table.add_row(safe(ret.name), verdict_text(ret.verdict), f"{ret.score:g}/{ret.points:g}", safe(why))
    console.print(table)
    if result.error is None:
        _explain_envelopes(console, any(ret.speaks_of_envelopes for ret in result.returns))
    if result.error is None and result.first_trial_error is not None and result.first_trial_error.traceback:
        first = result.first_trial_error
        console.print(f"  [bold]first failing call[/] (trial {first.trial}):")
        console.print(_indent(safe(first.traceback), 4))
    if result.runs_at_import:
        places = ", ".join(result.runs_at_import)
        console.print(
            f"  [dim]your files run code at import ({safe(places)}; importing took "
            f"{result.import_seconds:.2f} s): it ran once, before the trials, a check loop left there "
            "included; its random numbers are seeded, the same on every run[/]"
        )
    if result.notebook is not None:
        console.print(f"  [dim]{safe(notebook_note(result.notebook))}[/]")
    if result.file_choice is not None:
        style = "yellow" if result.file_choice.also_defined else "dim"
        console.print(f"  [{style}]{safe(file_choice_note(result.file_choice))}[/]")
    for ret in result.returns:
        if shows_failure(ret):
            _render_failure(console, result, ret)
    _render_output(console, result, show_output, output_hint)
    score = f"{result.score:g}/{result.max_score:g}"
    console.print(f"  score [bold]{score}[/]   [dim]isolation: {safe(result.isolation.brief)}[/]")
    replayed = any(r.case is not None for r in result.returns if r.verdict is not Verdict.ERROR)
    if not result.passed and not replayed and result.only_trial is None:
        console.print(f"  [dim]{REPLAY_LABEL}[/] {safe(result.repro(focus_trial(result)))}")
    console.print()


def _explain_envelopes(console: Console, spoken: bool) -> None:
    """ENVELOPE_MEANING, the first time this console's report speaks of envelopes (`spoken`: it just did)."""
    if console in _EXPLAINED or not spoken:
        return
    _EXPLAINED.add(console)
    text = textwrap.fill(
        ENVELOPE_MEANING, max(40, console.width - 2), initial_indent="  ", subsequent_indent="    "
    )
    console.print(f"[dim]{safe(text)}[/]")


def notebook_note(use: NotebookUse) -> str:
    """What of the notebook was graded, in a line: the exercise's `notebook.cells` and what it left out."""
    if use.cells == "definitions":
        note = (
            "notebook cells: definitions (the imports, functions, classes and constants of each code "
            f"cell); {use.left_out} other top-level statements left out"
        )
    elif use.cells == "tagged":
        note = f"notebook cells: tagged '{use.tag}' (those code cells, whole); {use.left_out} others left out"
    else:
        note = "notebook cells: all (every code cell runs at import)"
    if use.refused:
        note += f"; {len(use.refused)} definition(s) skipped: " + "; ".join(use.refused)
    if use.skipped_imports:
        note += f"; not imported: {', '.join(use.skipped_imports)}"
    if use.failed_cells:
        failed = "; ".join(str(c) for c in use.failed_cells)
        note += (
            f"; {len(use.failed_cells)} cell(s) failed outside the definitions and were skipped (not "
            f"scored; a later cell needing what they define fails in turn): {failed}"
        )
    return note


def _render_output(console: Console, result: SubmissionResult, show_output: bool, hint: str) -> None:
    for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if not text.strip():
            continue
        lines = text.strip().splitlines()
        if show_output:
            console.print(f"  [dim]your code's {stream}:[/]")
            console.print(_indent(safe(text.strip()), 4), style="dim")
        else:
            printed = counted(len(lines), "line")
            console.print(f"  [dim]your code printed {printed} to {stream} ({safe(hint)})[/]")


def _render_failure(console: Console, result: SubmissionResult, ret: ReturnResult) -> None:
    if ret.misconception is not None:
        name = safe(ret.misconception)
        console.print(f"  [bold]{safe(ret.name)}[/]: [yellow]{mistake_label(ret)}:[/] {name}")
        if ret.feedback:
            console.print(safe(_wrapped(ret.feedback, console.width)))
    elif ret.verdict.not_by_hand:
        console.print(f"  [bold]{safe(ret.name)}[/]: [yellow]to fix:[/] {safe(ret.feedback)}")
    case = ret.case
    if case is None:
        return
    sizes = sizes_text(case)
    console.print(f"  [bold]{safe(ret.name)}[/]: smallest failing case is trial {case.trial} ({sizes})")
    cells = grid(case.mask) if case.mask is not None else None
    if cells is not None:
        console.print("    failing entries (x), passing (.):")
        for row in cells:
            console.print("      " + " ".join("[red]x[/]" if bad else "[green].[/]" for bad in row))
    if ret.failing_entries:
        table = Table(box=None, padding=(0, 1, 0, 4), header_style="dim")
        for column in ("entry", "expected", "got", "abs err", "rel err", "ulps", "envelopes"):
            table.add_column(column, justify="right")
        for entry in ret.failing_entries[:5]:
            table.add_row(
                str(list(entry.index)),
                number(entry.expected),
                number(entry.got),
                f"{entry.abs_error:.2e}",
                f"{entry.rel_error:.2e}",
                f"{entry.ulps:.3g}",
                f"{entry.envelope_ratio:.3g}",
            )
        console.print(table)
        _explain_envelopes(console, True)
    # A run of one trial (`grader repro`, `check --trial`) is that trial's replay already: no command to
    # run it again.
    if result.only_trial is None:
        console.print(f"    [dim]{REPLAY_LABEL}[/] {safe(result.repro(case.trial))}")


def render_case(console: Console, result: SubmissionResult, trial: Trial) -> None:
    """One trial whole: its inputs, and for each return that fails it, expected and got side by side."""
    console.print(f"  [bold]trial {trial.index}[/] ({safe(trial.describe_sizes())}), inputs:")
    with np.printoptions(precision=6, suppress=False, linewidth=max(60, console.width - 8), threshold=400):
        for name, array in trial.inputs.items():
            console.print(f"    [bold]{safe(name)}[/] {_shape(array)}")
            console.print(_indent(safe(str(array)), 6))
        for ret in result.returns:
            case = ret.case
            if ret.verdict is Verdict.PASS or case is None:
                continue
            for label, value in (("expected", case.expected), ("got", case.got)):
                if value is not None:
                    console.print(f"    [bold]{safe(ret.name)}[/] {label} {_shape(np.asarray(value))}")
                    console.print(_indent(safe(str(np.asarray(value))), 6))


def _shape(array: np.ndarray) -> str:
    return f"(shape {tuple(array.shape)}, {array.dtype})"


def _wrapped(text: str, width: int) -> str:
    indent = "    "
    return textwrap.fill(text, max(40, width - 6), initial_indent=indent, subsequent_indent=indent)


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line for line in text.splitlines())


def _shared_prefix(ids: Sequence[str]) -> str:
    """The dotted prefix every id has ("cs231n.a3."), where there are several ids; else ""."""
    if len(ids) < 2:
        return ""
    parts = [i.split(".")[:-1] for i in ids]
    shared: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) > 1:
            break
        shared.append(level[0])
    return "".join(f"{part}." for part in shared)


def render_class(
    console: Console, results: Sequence[SubmissionResult], exercises: Sequence[str], students: Sequence[str]
) -> None:
    by_key = {(r.student, r.exercise): r for r in results}
    # Exercises nobody handed in would be columns of dashes: named once below the table instead.
    handed_in = {r.exercise for r in results if not not_submitted(r)}
    attempted = [e for e in exercises if e in handed_in]
    # A course's ids share their course and assignment (cs231n.a3.rnn, cs231n.a3.lstm): said once, in
    # the title, so that the columns have room for what tells them apart.
    prefix = _shared_prefix(attempted)
    title = f"grades ({prefix}*)" if prefix else "grades"
    table = Table(title=safe(title), header_style="bold")
    table.add_column("student", no_wrap=True)
    for exercise in attempted:
        table.add_column(safe(exercise.removeprefix(prefix)), justify="center")
    table.add_column("total", justify="right", no_wrap=True)
    points = {r.exercise: r.max_score for r in results if not not_submitted(r)}
    maximum = sum(points[e] for e in attempted)
    for student in students:
        cells, total, handed = [], 0.0, False
        for exercise in attempted:  # a library's exercises nobody handed in are not this class's work
            result = by_key.get((student, exercise))
            if result is None or not_submitted(result):
                cells.append("[dim]—[/]")
                continue
            total += result.score
            handed = True
            cells.append(f"{result.score:g}/{result.max_score:g} {verdict_text(result.worst)}")
        # As gradebook.csv: out of the class's maximum, and no total where nothing was handed in (never 0).
        table.add_row(safe(student), *cells, f"{total:g}/{maximum:g}" if handed else f"[dim]—[/]/{maximum:g}")
    console.print(table)
    if any(not_submitted(r) for r in results):
        console.print("[dim]— not handed in[/]")
    nobody = [e for e in exercises if e not in attempted]
    if nobody:
        console.print(f"[dim]handed in by nobody (0 for everyone): {safe(', '.join(nobody))}[/]")
    problems = [r for r in results if not r.passed]
    if any(not not_submitted(r) or r.exercise in attempted for r in problems):
        console.print("[bold]what failed[/]")
    missing: dict[str, list[str]] = {}
    for result in problems:
        if not_submitted(result):
            missing.setdefault(result.student, []).append(result.exercise)
            continue
        console.print(f"  [bold]{safe(result.student)}[/] / {safe(result.exercise)}:")
        if result.error is not None:
            where = result.error.where
            where = f" ({where})" if where else ""
            console.print(f"    error ({result.error.kind}): {safe(result.error.message)}{safe(where)}")
            console.print(f"    [dim]{REPLAY_LABEL} {safe(result.repro(focus_trial(result)))}[/]")
            continue
        for ret in result.returns:
            if ret.verdict is not Verdict.PASS:
                named = f" — {mistake_label(ret)}: {ret.misconception}" if ret.misconception else ""
                line = f"{safe(ret.name)} {verdict_text(ret.verdict)}: {safe(ret.message + named)}"
                console.print(f"    {line}")
        console.print(f"    [dim]{REPLAY_LABEL} {safe(result.repro(focus_trial(result)))}[/]")
    for student, exercises_missing in missing.items():
        shown = [e for e in exercises_missing if e in attempted]
        if shown:
            console.print(f"  [bold]{safe(student)}[/] did not hand in: {safe(', '.join(shown))}")
    chosen = [r for r in results if r.file_choice is not None and r.file_choice.also_defined]
    if chosen:
        console.print("[bold]several files define the function[/] (handin/choice.py's rule picks one)")
    for result in chosen:
        assert result.file_choice is not None
        note = file_choice_note(result.file_choice)
        console.print(f"  [bold]{safe(result.student)}[/] / {safe(result.exercise)}: [yellow]{safe(note)}[/]")
    told = any(
        ret.speaks_of_envelopes
        for r in problems
        if r.error is None
        for ret in r.returns
        if ret.verdict is not Verdict.PASS
    )
    _explain_envelopes(console, told)
