"""Where in the YAML a problem is: each path of keys and indices mapped to its line, and pydantic's
errors said as an exercise author reads them (the field as written, a close spelling, the value got).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import (
    BaseModel,
)

from grader.exercise.spec.models import (
    ARG_KEYS,
    Convention,
    ExerciseSpec,
    GradescopeSpec,
    GradSpec,
    InputSpec,
    Limits,
    Misconception,
    NotebookSpec,
    ReturnSpec,
    SizeRange,
    VjpSpec,
    WrongSolution,
)


def line_index(node: yaml.Node | None) -> dict[tuple[Any, ...], int]:
    """Map each path of keys/indices in the YAML document to its 1-based line."""
    lines: dict[tuple[Any, ...], int] = {}

    def walk(n: yaml.Node, path: tuple[Any, ...]) -> None:
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            for key, value in n.value:
                child = (*path, key.value)
                lines[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, (*path, i))

    if node is not None:
        walk(node, ())
    return lines


def line_for(lines: Mapping[tuple[Any, ...], int], location: tuple[Any, ...]) -> int | None:
    for end in range(len(location), -1, -1):
        line = lines.get(tuple(location[:end]))
        if line is not None:
            return line
    return None


_UNION_TAGS = {
    "int",
    "str",
    "float",
    "bool",
    "SizeRange",
    "tuple[str, ...]",
    *ARG_KEYS.values(),
    "InputName",
    "InputNames",
    "SamplerObject",
}


def clean_location(location: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union-member tags so locations read like the YAML."""
    return tuple(p for p in location if not (isinstance(p, str) and (p in _UNION_TAGS or "[" in p)))


def field_name(location: tuple[Any, ...]) -> str:
    text = ""
    for part in clean_location(location):
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def first_error(errors: list[Any]) -> Any:
    """The error to report: pydantic lists a required field's absence before the unknown field beside it,
    but a misspelt `retuns:` is both, and its own line and spelling are what the author must see."""
    first = errors[0]
    if first["type"] != "missing":
        return first
    parent = clean_location(tuple(first["loc"]))[:-1]
    for error in errors:
        if error["type"] == "extra_forbidden" and clean_location(tuple(error["loc"]))[:-1] == parent:
            return error
    return first


def describe(error: Any, location: tuple[Any, ...]) -> str:
    kind = error["type"]
    message = str(error["msg"]).removeprefix("Value error, ")
    clean = clean_location(location)
    if kind == "extra_forbidden":
        known = _model_at(clean[:-1])
        fields = [info.alias or name for name, info in (known.model_fields if known else {}).items()]
        close = difflib.get_close_matches(str(clean[-1]), fields, n=1)
        if close:
            return f"'{clean[-1]}' is not a field: did you mean '{close[0]}'?"
        listing = f"; known fields: {', '.join(fields)}" if fields else ""
        return f"unknown field '{clean[-1]}'{listing}"
    if kind == "missing":
        return f"required field '{clean[-1]}' is missing"
    value = error.get("input")
    if kind == "literal_error" and isinstance(value, str):
        allowed = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
        close = difflib.get_close_matches(value, allowed, n=1)
        if close:
            return f"{message} (got {value!r}): did you mean '{close[0]}'?"
    if kind == "object_kind" and isinstance(value, dict):
        return f"{message} (got {value.get('object')!r})"
    if value is not None and not isinstance(value, dict | list):
        return f"{message} (got {value!r})"
    return message


def _model_at(location: tuple[Any, ...]) -> type[BaseModel] | None:
    shape = tuple("#" if isinstance(p, int) else p for p in location)
    models: dict[tuple[Any, ...], type[BaseModel]] = {
        (): ExerciseSpec,
        ("limits",): Limits,
        ("notebook",): NotebookSpec,
        ("gradescope",): GradescopeSpec,
        ("returns", "#"): ReturnSpec,
        ("returns", "#", "grad"): GradSpec,
        ("returns", "#", "vjp"): VjpSpec,
        ("wrong", "#"): WrongSolution,
        ("misconceptions", "#"): Misconception,
        ("conventions", "#"): Convention,
    }
    if len(shape) == 2 and shape[0] in ("inputs", "sizes"):
        return InputSpec if shape[0] == "inputs" else SizeRange
    return models.get(shape)
