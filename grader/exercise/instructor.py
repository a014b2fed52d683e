"""The escape hatch for what the graph language cannot say: `reference: reference.py:function`.

The instructor's torch function is loaded from the exercise's folder and called with the inputs and sizes
its parameters name: float inputs as float64 tensors (those differentiated require grad), integer inputs
as int64 tensors, sizes as Python ints. It returns a dict of named tensors, which the returns name as
they would the graph's values. The file is run from its source text, by one path wherever it runs: read
from the exercise's folder here, or handed over with the request in a zygote's fork, which cannot read
that folder (`provide_source`; zygote_references.py). It runs where the graph runs: under vmap over the
trials of one size (falling back to one trial at a time where vmap cannot batch it, as when it calls
`.item()` or numpy), under the Monte Carlo rounding mode, and differentiated by autograd. It is the
instructor's code, trusted as the exercise's YAML is; it never runs beside a student's.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from grader.errors import GraderError
from grader.exercise.spec import SPEC_FILE, Exercise


class InstructorReferenceError(GraderError):
    """The exercise's reference function cannot be loaded or called, or returns something unusable."""


def reference_values(exercise: Exercise, env: Mapping[str, Any]) -> dict[str, Any]:
    """`env` (inputs and sizes) with the reference function's values added; unchanged without one."""
    return instructor_reference(exercise)(env)


def instructor_reference(exercise: Exercise) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """reference_values for this exercise with its function looked up once: a group's evaluation calls it
    for every trial where vmap cannot batch it, and the lookup (the file's mtime, the signature) cost more
    than dropout's own arithmetic."""
    if exercise.spec.reference is None:
        return dict
    function, parameters = _function(exercise)
    where = f"{exercise.root / SPEC_FILE}: reference {exercise.spec.reference}"

    def values(env: Mapping[str, Any]) -> dict[str, Any]:
        computed = function(**{name: env[name] for name in parameters if name in env})
        if not isinstance(computed, Mapping) or not all(isinstance(k, str) for k in computed):
            raise InstructorReferenceError(
                f"{where} returned {type(computed).__name__}; it must return a dict of named values, "
                "such as {'out': out, 'loss': loss}, which the returns name"
            )
        missing = [name for name in exercise.computed if name not in computed]
        if missing:
            raise InstructorReferenceError(
                f"{where} returned {sorted(computed)}, without {missing}, which the returns name; "
                "return every value the returns take"
            )
        return {**env, **computed}

    return values


def reference_source(exercise: Exercise) -> str | None:
    """The text of the exercise's reference file (None without one): what `provide_source` hands a process
    that cannot read the exercise's folder."""
    if exercise.spec.reference_file is None:
        return None
    return _source(exercise.path_of(exercise.spec.reference_file))


def provide_source(exercise: Exercise, source: str) -> None:
    """Run the exercise's reference file from `source` in this process, its folder unread: a zygote's fork
    (zygote_references.py), which the sandbox keeps from the exercises' files."""
    if exercise.spec.reference_file is not None:
        _PROVIDED[str(exercise.path_of(exercise.spec.reference_file))] = source


# Sources handed to this process instead of read (a zygote's fork), by the file's path.
_PROVIDED: dict[str, str] = {}


def _source(path: Path) -> str:
    provided = _PROVIDED.get(str(path))
    if provided is not None:
        return provided
    try:
        return _read(path, path.stat().st_mtime_ns)
    except (OSError, UnicodeDecodeError) as exc:
        raise InstructorReferenceError(f"{path}: cannot be read: {exc}") from exc


@cache
def _read(path: Path, _mtime: int) -> str:
    """The file's text, read once per version of it (the key holds its mtime)."""
    return path.read_text(encoding="utf-8")


def _function(exercise: Exercise) -> tuple[Callable[..., Any], tuple[str, ...]]:
    """The reference function and its parameters' names, each an input or a size (or defaulted)."""
    assert exercise.spec.reference_file is not None and exercise.spec.reference_function is not None
    path = exercise.path_of(exercise.spec.reference_file)
    known = frozenset({*exercise.spec.inputs, *exercise.spec.sizes})
    where = f"{exercise.root / SPEC_FILE}: reference {exercise.spec.reference}"
    return _checked(_source(path), str(path), exercise.spec.reference_function, known, where)


@cache
def _checked(
    source: str, path: str, name: str, known: frozenset[str], where: str
) -> tuple[Callable[..., Any], tuple[str, ...]]:
    """_function's answer, worked out once per text of the file: every group's evaluation asks (conv_naive
    has 979 of them), and each paid for inspect.signature again."""
    function = _load(source, path, name)
    parameters = inspect.signature(function).parameters
    for parameter_name, parameter in parameters.items():
        if parameter_name not in known and parameter.default is inspect.Parameter.empty:
            raise InstructorReferenceError(
                f"{where}: its parameter '{parameter_name}' "
                f"is neither an input nor a size (they are {', '.join(sorted(known))}); name it after one, "
                "or give it a default"
            )
    return function, tuple(parameters)


@cache
def _load(source: str, path: str, name: str) -> Callable[..., Any]:
    """The function, its module run once per text of the file (the key holds the text itself)."""
    module = types.ModuleType(f"_grader_reference_{abs(hash((path, source)))}")
    module.__file__ = path
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        # Registered while it runs, as an import would: a dataclass or a pickle in it looks itself up.
        sys.modules[module.__name__] = module
        try:
            exec(code, module.__dict__)  # the instructor's file, trusted as the exercise's YAML is
        finally:
            sys.modules.pop(module.__name__, None)
    except Exception as exc:
        raise InstructorReferenceError(f"{path}: fails on import: {type(exc).__name__}: {exc}") from exc
    function = getattr(module, name, None)
    if not callable(function):
        defined = sorted(
            n for n, v in vars(module).items() if inspect.isfunction(v) and not n.startswith("_")
        )
        raise InstructorReferenceError(
            f"{path}: defines no function '{name}' (it defines {', '.join(defined) or 'none'})"
        )
    return function  # type: ignore[no-any-return]
