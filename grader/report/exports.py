"""`--out DIR`: the files an instructor uploads — a CSV gradebook, Gradescope results, a class summary.

DIR/gradebook.csv       one row per student, one column per exercise (its score), a total and the maximum
DIR/<student>/results.json   Gradescope's autograder format: one test per (exercise, return)
DIR/summary.json        per exercise: verdict counts, the most common misconceptions and failing entries
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from grader.outcomes import Verdict
from grader.results import ReturnResult, SubmissionResult
from grader.text import valid_unicode

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
JSONLike = TypeVar("JSONLike")


def write_all(
    folder: Path, results: Sequence[SubmissionResult], exercises: Sequence[str], students: Sequence[str]
) -> list[Path]:
    """Write every export for these results; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [_gradebook_csv(folder / "gradebook.csv", results, exercises, students)]
    for student in students:
        mine = [r for r in results if r.student == student]
        path = folder / _safe(student) / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(gradescope_results(mine), indent=1), encoding="utf-8")
        written.append(path)
    summary = folder / "summary.json"
    summary.write_text(json.dumps(class_summary(results, exercises), indent=1), encoding="utf-8")
    written.append(summary)
    return written


def _safe(name: str) -> str:
    return _SAFE.sub("_", name) or "_"


def _gradebook_csv(
    path: Path, results: Sequence[SubmissionResult], exercises: Sequence[str], students: Sequence[str]
) -> Path:
    by_key = {(r.student, r.exercise): r for r in results}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *exercises, "total", "max_total"])
        for student in students:
            row: list[Any] = [student]
            total = maximum = 0.0
            for exercise in exercises:
                result = by_key.get((student, exercise))
                row.append("" if result is None else f"{result.score:g}")
                if result is not None:
                    total += result.score
                    maximum += result.max_score
            writer.writerow([*row, f"{total:g}", f"{maximum:g}"])
    return path


def encodable(value: JSONLike) -> JSONLike:
    """`value` with every string valid Unicode: student text may hold lone surrogates."""
    if isinstance(value, str):
        return valid_unicode(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        return [encodable(v) for v in value]  # type: ignore[return-value]
    return value


def gradescope_results(results: Sequence[SubmissionResult]) -> dict[str, Any]:
    """Gradescope's results.json for one student: one test per (exercise, return)."""
    tests = []
    for result in results:
        for ret in result.returns:
            tests.append(
                {
                    "name": f"{result.exercise}: {ret.name}",
                    "score": ret.score,
                    "max_score": ret.points,
                    "status": "passed" if ret.verdict is Verdict.PASS else "failed",
                    "output": _test_output(result, ret),
                    "visibility": "visible",
                    "tags": [ret.verdict.value, *([ret.misconception] if ret.misconception else [])],
                }
            )
    return encodable(
        {
            "score": sum(r.score for r in results),
            "max_score": sum(r.max_score for r in results),
            "execution_time": round(sum(r.seconds for r in results), 3),
            "output": "\n".join(_summary_line(r) for r in results),
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": tests,
        }
    )


def _summary_line(result: SubmissionResult) -> str:
    return f"{result.exercise}: {result.score:g}/{result.max_score:g} ({result.worst.value})"


def _test_output(result: SubmissionResult, ret: ReturnResult) -> str:
    lines = [f"{ret.verdict.value}: {ret.message}"]
    if ret.misconception is not None:
        lines.append(f"likely mistake: {ret.misconception}" + (f" — {ret.feedback}" if ret.feedback else ""))
    if result.error is not None:
        lines.append(f"error ({result.error.kind}): {result.error.message}")
        if result.error.traceback:
            lines.append(result.error.traceback)
    if ret.verdict is not Verdict.PASS and result.error is None:
        trial = ret.case.trial if ret.case is not None else None
        lines.append(f"replay: {result.repro(trial)}")
    return "\n".join(lines)


def class_summary(results: Sequence[SubmissionResult], exercises: Sequence[str]) -> dict[str, Any]:
    """Per exercise and return: how many got each verdict, the misconceptions and entries that fail most."""
    summary: dict[str, Any] = {"exercises": {}}
    for exercise in exercises:
        mine = [r for r in results if r.exercise == exercise]
        returns: dict[str, Any] = {}
        names = [ret.name for ret in mine[0].returns] if mine else []
        for name in names:
            rets = [ret for r in mine for ret in r.returns if ret.name == name]
            entries = Counter(tuple(e.index) for ret in rets for e in ret.failing_entries)
            returns[name] = {
                "verdicts": dict(Counter(ret.verdict.value for ret in rets)),
                "misconceptions": [
                    {"name": m, "count": c}
                    for m, c in Counter(ret.misconception for ret in rets if ret.misconception).most_common(5)
                ],
                "failing_entries": [{"index": list(i), "count": c} for i, c in entries.most_common(5)],
            }
        summary["exercises"][exercise] = {
            "submissions": len(mine),
            "passed": sum(1 for r in mine if r.passed),
            "errors": dict(Counter(r.error.kind.value for r in mine if r.error is not None)),
            "mean_score": round(sum(r.score for r in mine) / len(mine), 3) if mine else None,
            "max_score": mine[0].max_score if mine else None,
            "returns": returns,
        }
    return encodable(summary)
