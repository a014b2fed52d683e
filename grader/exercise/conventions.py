"""An exercise as another course year's convention computes it: the exercise its declared convention
describes, with the graph's lines it replaces, or its reference function, in place of the exercise's."""

from __future__ import annotations

from dataclasses import replace

from grader.exercise.graph import parse
from grader.exercise.spec import Convention, Exercise


def convention_variant(exercise: Exercise, convention: Convention) -> Exercise:
    """`exercise` computed under `convention`: every return follows what it changes."""
    spec, program = exercise.spec, exercise.program
    if convention.reference is not None:
        spec = spec.model_copy(update={"reference": convention.reference})
    if convention.graph is not None:
        # Checked when the spec was loaded (spec/checks.py): the lines parse over these names.
        known = [*spec.inputs, *spec.sizes, *exercise.computed]
        program = program.with_lines(parse(convention.graph, known))
    return replace(exercise, spec=spec, program=program)
