"""The grader from Python: `grader.check(...)` in a student's notebook, `grader.grade(...)` for instructors.

    import grader
    grader.check("exercises/mac0460/graph2", graph2)          # the function objects, in this process
    grader.check("graph2", graph2, trials=50)                 # the exercise by id, found under the cwd
    result = grader.grade("exercises/mac0460/graph2", "hw.py") # a file, sandboxed: what `grader check` does
    results = grader.grade_file("exercises/cs231n/a2", "layers.py")  # every exercise the file defines

`check` grades the functions the student defined in their own kernel, with no sandbox (their machine,
their code), by the same trials, reruns and judging as `grader check EXERCISE FILE`: the same verdicts on
the same code. What it returns shows itself in Jupyter (an HTML table) and as text elsewhere.
"""

from __future__ import annotations

import functools
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from grader.errors import UsageError
from grader.exercise.settings import Settings
from grader.exercise.spec import SPEC_FILE, Exercise, exercise_argument
from grader.exercise.spec import load_exercise as _loaded
from grader.exercise.trials import DEFAULT_SEED, Trial, make_trial
from grader.handin.prepare import Submission
from grader.outcomes import Failure
from grader.results import SubmissionResult

if TYPE_CHECKING:
    from rich.console import Console

ExerciseRef = str | Path | Exercise  # a folder, its exercise.yaml, an id, or an exercise loaded already
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _short_errors(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """The API function, its UsageErrors raised from it alone: a misspelt id in a notebook reads as one
    line under the student's own call, not as a traceback through the grader's lookup (IPython shows
    GraderError's one line anyway; plain Python then shows this one frame, not every frame below it)."""

    @functools.wraps(function)
    def called(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        __tracebackhide__ = True  # pytest and IPython leave out a frame that sets it
        try:
            return function(*args, **kwargs)
        except UsageError as error:
            raise error.with_traceback(None) from None

    return called


def _settings(call: str, seed: int, trials: int | None, trial: int | None) -> Settings:
    """The call's settings, resolved once (the reference cache's from the environment), from `seed`,
    `trials` and `trial` as a caller typed them: checked before anything is drawn from them."""

    def whole(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    if not whole(seed) or seed < 0:
        raise UsageError(f"{call}: seed={seed!r} is not a seed; give a whole number, 0 or more")
    if trials is not None and (not whole(trials) or trials < 1):
        raise UsageError(f"{call}: trials={trials!r}; give how many trials to run, a whole number from 1")
    if trial is not None and (not whole(trial) or trial < 0):
        raise UsageError(f"{call}: trial={trial!r}; give the number of the trial to replay, 0 or more")
    return Settings(seed, trials, trial)


@_short_errors
def find_exercise(name: str | Path) -> Path:
    """The folder of an exercise: `name` is its folder (or exercise.yaml), or its id, looked up as
    `grader check` looks it up: among the exercises below the current directory (a course ships its
    exercises folder next to the notebook: ./exercises/**, or ./graph2) and GRADER_EXERCISES's folders."""
    path = exercise_argument(Path(name).expanduser())
    if not ((path / SPEC_FILE).is_file() or (path.suffix in (".yaml", ".yml") and path.is_file())):
        raise UsageError(f"{path}: no {SPEC_FILE} there; give the exercise's folder (the one holding it)")
    return path


@_short_errors
def load_exercise(exercise: ExerciseRef) -> Exercise:
    """An exercise, loaded and checked for grading: from its folder, its exercise.yaml, or its id."""
    if isinstance(exercise, Exercise):
        return exercise
    return _loaded(find_exercise(exercise), authoring=False)


@_short_errors
def grade(
    exercise: ExerciseRef,
    submission: str | Path,
    seed: int = DEFAULT_SEED,
    trials: int | None = None,
    trial: int | None = None,
) -> SubmissionResult:
    """Grade a hand-in (a .py or .ipynb file, or a folder of them) in the sandbox: what
    `grader check EXERCISE FILE --seed SEED --trials N` does, as a value (results.SubmissionResult).

    `trials`: how many (default: the exercise's); `trial`: that one trial alone, as `grader repro`.
    """
    from grader.exercise.reference_cache import untrusted_process
    from grader.grading import grade as graded
    from grader.handin.discover import submission_from_path

    settings = _settings("grader.grade", seed, trials, trial)
    untrusted_process()  # the caller's process: a notebook's code may have patched torch before this call
    loaded = load_exercise(exercise)
    cells = loaded.spec.notebook.selection
    handed = submission_from_path(Path(submission), loaded.spec.entry, notebook=cells, rule=loaded.file_rule)
    return graded(loaded, handed, settings)


@_short_errors
def grade_file(
    exercises: ExerciseRef | Sequence[ExerciseRef],
    submission: str | Path,
    seed: int = DEFAULT_SEED,
    trials: int | None = None,
) -> list[SubmissionResult]:
    """Grade a hand-in on every exercise whose function it defines, in the sandbox, its files imported
    once for all (grading.grade_file): what `grader check FOLDER FILE` does, as values.

    `exercises`: a folder of exercises (a course's assignment: exercises/cs231n/a2), or exercises as
    `grade` takes one. Each result is the one `grade` gives that exercise alone.
    """
    from grader.exercise.reference_cache import untrusted_process
    from grader.exercise.spec import discover_exercises
    from grader.grading import grade_file as graded
    from grader.handin.discover import may_define, submission_from_path

    settings = _settings("grader.grade_file", seed, trials, None)
    untrusted_process()  # the caller's process: a notebook's code may have patched torch before this call
    refs = [exercises] if isinstance(exercises, str | Path | Exercise) else list(exercises)
    loaded: list[Exercise] = []
    for ref in refs:
        folder = Path(ref).expanduser() if isinstance(ref, str | Path) else None
        if folder is not None and folder.is_dir() and not (folder / SPEC_FILE).is_file():
            loaded += [_loaded(path, authoring=False) for path in discover_exercises(folder)]
        else:
            loaded.append(load_exercise(ref))
    handed = []
    for exercise in loaded:
        cells = exercise.spec.notebook.selection
        handin = submission_from_path(
            Path(submission), exercise.spec.entry, notebook=cells, rule=exercise.file_rule
        )
        if may_define(handin, exercise.spec.entry):
            handed.append((exercise, handin))
    if not handed:
        entries = ", ".join(sorted({e.spec.entry for e in loaded}))
        raise UsageError(f"{submission}: defines none of the functions these exercises grade ({entries})")
    return graded(handed, settings)


@_short_errors
def check(
    exercise: ExerciseRef,
    *functions: Callable[..., Any],
    seed: int = DEFAULT_SEED,
    trials: int | None = None,
    trial: int | None = None,
    **named: Callable[..., Any],
) -> Checked:
    """Grade function objects in this Python process (a notebook's kernel): no sandbox, your own machine.

    Each function is the exercise's entry of its `__name__` (a forward and a backward for an exercise of
    two calls), or is passed by the entry's name: `check("affine", affine_forward, affine_backward=bwd)`.
    `trials`: how many (default: the exercise's); `trial`: that one trial alone, to replay it. The
    verdicts are those `grader check EXERCISE FILE` gives the same code. No deadlines: a call that never
    returns is stopped by Ctrl-C (in Jupyter: interrupt the kernel).
    """
    from grader.exercise.reference_cache import untrusted_process
    from grader.grading import Runner
    from grader.grading import grade as graded
    from grader.sandbox.in_process import InProcessRunner
    from grader.sandbox.report import WorkerReport

    settings = _settings("grader.check", seed, trials, trial)
    untrusted_process()  # the student's code runs here: no reference computed here is written for others
    loaded = load_exercise(exercise)
    ordered = _by_entry(loaded, functions, named)
    where = _code_folder(ordered)

    def start(student: int, after: WorkerReport | None) -> Runner:
        # Never `after`: it has no deadlines to overrun.
        return InProcessRunner(loaded, ordered, student, where, _as_cells(where))

    result = graded(loaded, Submission("", where, ()), settings, start=start)
    calls = ", ".join(f"{entry}()" for entry in _entries(loaded))
    result = replace(result, submission=f"{calls} in this Python process")
    replayed = make_trial(loaded, seed, trial) if trial is not None else None
    return Checked(result, _call(exercise, loaded, functions, named, seed), replayed)


@dataclass(frozen=True, repr=False)
class Checked:
    """What `check` found: shown as HTML in Jupyter, as text elsewhere (`print(...)`); its numbers as
    `passed`, `score` and `max_score`, the whole result as `result` (results.SubmissionResult)."""

    result: SubmissionResult
    call: str  # `grader.check(...)` as the notebook wrote it, up to its options: what a replay calls
    replayed: Trial | None = None  # the one trial a replay (`trial=`) ran, shown whole

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def score(self) -> float:
        return self.result.score

    @property
    def max_score(self) -> float:
        return self.result.max_score

    def _shown(self) -> _Replayed:
        values = {f.name: getattr(self.result, f.name) for f in fields(self.result)}
        return _Replayed(**values, call=self.call)

    def __str__(self) -> str:
        from grader.report.terminal import render_case, render_result

        def rendered(console: Console) -> None:
            render_result(console, self._shown(), output_hint=".result.stdout and .result.stderr hold them")
            if self.replayed is not None:
                render_case(console, self.result, self.replayed)

        return _text(rendered)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        """What Jupyter shows: the result as HTML, the failing entries as a grid of coloured cells; a
        replay's trial (its inputs, expected and got) below it, as text."""
        from grader.report.html_result import escape, result_html
        from grader.report.terminal import render_case

        # No single `replay=` for all: the notebook result's own replays name each case's trial.
        page = result_html(self._shown())
        replayed = self.replayed
        if replayed is None:
            return page
        case = _text(lambda console: render_case(console, self.result, replayed))
        return f'{page}<pre class="grader-case">{escape(case)}</pre>'


def _text(render: Callable[[Console], None]) -> str:
    """What `render` prints, as plain text: no colours, and not displayed by rich itself under Jupyter."""
    from rich.console import Console

    out = io.StringIO()
    render(Console(file=out, width=110, highlight=False, color_system=None, force_jupyter=False, emoji=False))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


@dataclass(frozen=True)
class _Replayed(SubmissionResult):
    """A result as a notebook shows it: its replays are calls of grader.check, not commands to type."""

    call: str = ""

    def repro(self, trial: int | None = None) -> str:
        if trial is not None:
            return f"{self.call}, trial={trial})"
        return f"{self.call}, trials={self.trials})"


def _entries(exercise: Exercise) -> list[str]:
    """The functions the exercise calls, in order: its entry, then its `then` calls'."""
    return [exercise.spec.entry, *(call.entry for call in exercise.spec.then)]


def _by_entry(
    exercise: Exercise, functions: Sequence[Callable[..., Any]], named: dict[str, Callable[..., Any]]
) -> list[Callable[..., Any]]:
    """One function per entry of the exercise, in its order: by keyword, else by `__name__`."""
    entries = _entries(exercise)
    wanted = " and ".join(entries)
    given: dict[str, Callable[..., Any]] = {}
    for function in functions:
        name = getattr(function, "__name__", None)
        if not callable(function) or name not in entries:
            what = f"a function named {name}" if name is not None else "a callable with no __name__"
            what = what if callable(function) else f"a {type(function).__name__}"
            raise UsageError(
                f"grader.check: {what} is not a function of exercise {exercise.id}, which calls {wanted}; "
                f"name it as the assignment does, or pass it as {entries[0]}=your_function"
            )
        if name in given or name in named:
            raise UsageError(f"grader.check: two functions for {name}; pass one")
        given[name] = function
    for name, function in named.items():
        if name not in entries:
            raise UsageError(
                f"grader.check: {name}= is not a function of exercise {exercise.id}, which calls {wanted}"
            )
        if not callable(function):
            raise UsageError(f"grader.check: {name}= is a {type(function).__name__}, not a function")
        given[name] = function
    missing = [entry for entry in entries if entry not in given]
    if missing:
        raise UsageError(
            f"grader.check: no function for {' and '.join(missing)}; exercise {exercise.id} calls {wanted}: "
            f"pass each (grader.check(..., {', '.join(entries)})), or by name ({missing[0]}=your_function)"
        )
    return [given[entry] for entry in entries]


def _code_folder(functions: Sequence[Callable[..., Any]]) -> Path:
    """The folder of the functions' code, whose frames a failure's traceback shows (a notebook kernel's
    cell files); the current directory where it cannot be told."""
    files = [getattr(getattr(f, "__code__", None), "co_filename", None) for f in functions]
    folders = [os.path.dirname(f) for f in files if isinstance(f, str) and os.path.isabs(f)]
    return Path(os.path.commonpath(folders)) if folders else Path.cwd()


_FILE_NAME = r'[^"\n]+'
_FILE = re.compile(rf'File "(?P<file>{_FILE_NAME})"')


def _as_cells(folder: Path) -> Callable[[Failure], Failure] | None:
    """In IPython (a Jupyter kernel), failures' places in its cell files (`File "2875901.py"`) told as
    the cells the student sees (`File "In[3]"`); None elsewhere."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    names = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if names is None:
        return None

    def shown(file: str) -> str | None:
        named = names(str(folder / file))
        return named[1] if isinstance(named, tuple) and len(named) == 2 else None

    def cell(match: re.Match[str]) -> str:
        named = shown(match["file"])
        return f'File "{named}"' if named is not None else match.group(0)

    def relocated(failure: Failure) -> Failure:
        location = failure.location
        if location is not None and re.fullmatch(_FILE_NAME, location.file):  # a name _FILE finds
            named = shown(location.file)
            location = location if named is None else replace(location, file=named)
        message, traceback = _FILE.sub(cell, failure.message), _FILE.sub(cell, failure.traceback)
        return replace(failure, message=message, traceback=traceback, location=location)

    return relocated


def _call(
    exercise: ExerciseRef,
    loaded: Exercise,
    functions: Sequence[Callable[..., Any]],
    named: dict[str, Callable[..., Any]],
    seed: int,
) -> str:
    """`grader.check(...)` as called, without its closing parenthesis (a replay adds its trial)."""
    where = str(loaded.root) if isinstance(exercise, Exercise) else str(exercise)
    args = [repr(where), *(f.__name__ for f in functions)]
    args += [f"{name}={getattr(f, '__name__', name)}" for name, f in named.items()]
    if seed != DEFAULT_SEED:
        args.append(f"seed={seed}")
    return f"grader.check({', '.join(args)}"
