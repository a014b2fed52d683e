"""docs/exercises.md's table of the bundled exercises, made from their specs, so it never drifts from them.

.venv/bin/python scripts/library_table.py            # rewrite the table in docs/exercises.md
.venv/bin/python scripts/library_table.py --check    # exit 1 if docs/exercises.md's table is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.exercise.spec import (
    Arg,
    DictArg,
    Exercise,
    IndexOfArg,
    LiteralArg,
    SamplerObject,
    TokensArg,
    discover_exercises,
    load_exercise,
)

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- library-table:start -->", "<!-- library-table:end -->"


def _arg(arg: Arg) -> str:
    if isinstance(arg, LiteralArg):
        return repr(arg.value)
    if isinstance(arg, DictArg):
        return "{" + ", ".join(f"{k}: {v}" for k, v in arg.entries.items()) + "}"
    if isinstance(arg, TokensArg):
        return f"words({arg.tokens})"
    if isinstance(arg, IndexOfArg):
        return "{word: index}"
    if isinstance(arg, SamplerObject):
        return f"sampler({', '.join(arg.methods)})"
    return arg if isinstance(arg, str) else "(" + ", ".join(arg) + ")"


def _call(entry: str, args: tuple[Arg, ...], gives: tuple[str, ...]) -> str:
    returned = gives[0] if len(gives) == 1 else "(" + ", ".join(gives) + ")"
    return f"`{entry}({', '.join(_arg(a) for a in args)}) -> {returned}`"


def _calls(exercise: Exercise) -> str:
    spec = exercise.spec
    calls = [_call(spec.entry, spec.args, spec.binds or exercise.return_names)]
    calls += [_call(c.entry, c.args, c.binds) for c in spec.then]
    return ", then ".join(calls)


def _differentiated(exercise: Exercise) -> str:
    parts = []
    for ret in exercise.spec.returns:
        if ret.grad is not None:
            parts.append(f"{ret.name} = ∂{ret.grad.of}/∂{ret.grad.wrt}")
        elif ret.vjp is not None:
            parts.append(f"{ret.name} = ∂{ret.vjp.of}/∂{ret.vjp.wrt} · {ret.vjp.upstream}")
    return "; ".join(parts) or "values only"


def table(exercises_root: Path = ROOT / "exercises") -> str:
    lines = [
        "| folder | id | calls | differentiated | expected from | what it is |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for folder in discover_exercises(exercises_root):
        exercise = load_exercise(folder, authoring=False)
        source = "graph" if exercise.spec.graph is not None else f"`{exercise.spec.reference}`"
        where = folder.relative_to(exercises_root).parent.as_posix()
        row = [
            where,
            f"`{exercise.id}`",
            _calls(exercise),
            _differentiated(exercise),
            source,
            exercise.spec.title,
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines)


def _with_table(readme: str) -> str:
    head, _, rest = readme.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the table is out of date")
    args = parser.parse_args()
    readme = ROOT / "docs" / "exercises.md"
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        sys.stderr.write(f"{readme}: no {START} ... {END} markers around the exercise table\n")
        return 2
    wanted = _with_table(text)
    if args.check:
        if wanted != text:
            sys.stderr.write(
                f"{readme}: the exercise table is out of date: run python scripts/library_table.py\n"
            )
            return 1
        return 0
    readme.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
