"""Exercise specs: `exercises/<id>/exercise.yaml` → validated, immutable `Exercise`.

Every problem is reported as a SpecError naming the file, the line and the field, so an exercise author
never has to read a pydantic traceback. By concern:

    models.py     the YAML's shape (pydantic models), each field checked as it is read
    locations.py  where in the YAML a problem is, and pydantic's errors said as an author reads them
    checks.py     what the models alone cannot check: names that refer to each other, graph, files
    exercise.py   the loaded Exercise, and what derives from it (the worker's calls, points, its hash)
    loading.py    load_exercise, discover_exercises, and the exercise a command line names

Every name is imported from here (`from grader.exercise.spec import Exercise`), as when this was one module.
"""

from __future__ import annotations

from grader.exercise.spec.exercise import Exercise, exercise_hash
from grader.exercise.spec.loading import EXERCISES_ENV, discover_exercises, exercise_argument, load_exercise
from grader.exercise.spec.models import (
    FIRST_CALL_SECONDS,
    MISCONCEPTION,
    OBJECT_KINDS,
    SPEC_FILE,
    WALL_CAP_FACTOR,
    Arg,
    CallSpec,
    Convention,
    DictArg,
    ExerciseSpec,
    GradescopeSpec,
    GradSpec,
    IndexOfArg,
    InputSpec,
    Limits,
    LiteralArg,
    LiteralValue,
    MethodSpec,
    Misconception,
    NotebookSpec,
    ObjectArg,
    ReturnSpec,
    SamplerObject,
    Scalar,
    SizeExpr,
    SizeRange,
    TokensArg,
    Visibility,
    VjpSpec,
    Vocabulary,
    WrongSolution,
)

__all__ = [
    "EXERCISES_ENV",
    "FIRST_CALL_SECONDS",
    "MISCONCEPTION",
    "OBJECT_KINDS",
    "SPEC_FILE",
    "WALL_CAP_FACTOR",
    "Arg",
    "CallSpec",
    "Convention",
    "DictArg",
    "Exercise",
    "ExerciseSpec",
    "GradSpec",
    "GradescopeSpec",
    "IndexOfArg",
    "InputSpec",
    "Limits",
    "LiteralArg",
    "LiteralValue",
    "MethodSpec",
    "Misconception",
    "NotebookSpec",
    "ObjectArg",
    "ReturnSpec",
    "SamplerObject",
    "Scalar",
    "SizeExpr",
    "SizeRange",
    "TokensArg",
    "Visibility",
    "VjpSpec",
    "Vocabulary",
    "WrongSolution",
    "discover_exercises",
    "exercise_argument",
    "exercise_hash",
    "load_exercise",
]
