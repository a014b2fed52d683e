"""The verdict path runs without torch: every module of grader/judging/ but the naming of mistakes
(judging/naming/, which computes a mistake's values with the reference, in torch) imports, and judges a
return pass, precision or logic (a rerun included), in a fresh interpreter that never loads torch. Torch
costs seconds to import, and a class's verdicts, most of them pass, need none of it: a top-level torch
import on the verdict path, or one of naming's modules imported there at the top, fails here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT

_PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    sys.path.insert(0, ".")
    from pathlib import Path

    import numpy as np

    import grader.judging

    # Found on disk, so that a module added to the verdict path is covered without a word here.
    verdict_path = [
        m.name
        for m in pkgutil.walk_packages(grader.judging.__path__, "grader.judging.")
        if not m.name.startswith("grader.judging.naming")
    ]
    for name in verdict_path:
        importlib.import_module(name)

    from grader.exercise.spec import load_exercise
    from grader.exercise.trials import make_trials
    from grader.judging.classify import classify_return
    from grader.judging.compare import compare_columns
    from grader.judging.reruns.outcomes import Answered
    from grader.judging.reruns.resolve import finite_somewhere, resolve_with_rerun

    exercise = load_exercise(Path("exercises/basics/reciprocal"))
    trials = {t.index: t for t in make_trials(exercise, 0, 20)}
    due = {
        i: {
            "loss": np.array(np.sum(1 / t.inputs["a_np"])),
            "auto_grad": -1 / t.inputs["a_np"] ** 2,
            "user_grad": -1 / t.inputs["a_np"] ** 2,
        }
        for i, t in trials.items()
    }
    # loss doubled in float32 code, still wrong when rerun at float64; auto_grad right; user_grad right
    # but in float32, outside its rtol of 1e-10.
    returned = {
        "loss": {i: np.asarray(2 * e["loss"], dtype=np.float32) for i, e in due.items()},
        "auto_grad": {i: e["auto_grad"].copy() for i, e in due.items()},
        "user_grad": {i: e["user_grad"].astype(np.float32) for i, e in due.items()},
    }
    verdicts = {}
    for spec in exercise.spec.returns:
        got = returned[spec.name]
        indices = sorted(got)
        expected = [due[i][spec.name] for i in indices]
        judged = compare_columns(
            spec,
            indices,
            expected,
            [got[i] for i in indices],
            [str(got[i].dtype) for i in indices],
            [np.zeros_like(e) for e in expected],
        )
        resolved = {
            i: resolve_with_rerun(
                c, spec, due[i][spec.name], np.zeros_like(due[i][spec.name]), got[i],
                Answered(np.asarray(2 * due[i][spec.name]), "float64"),
            )
            for i, c in judged.others.items()
            if c.verdict.value == "logic"
        }
        judged = finite_somewhere(judged.with_others({**judged.others, **resolved}))
        result = classify_return(exercise, spec.name, judged, trials, due, got)
        verdicts[spec.name] = [result.verdict.value, result.precision.value, result.message]
    print(json.dumps({"verdicts": verdicts, "modules": verdict_path, "torch": "torch" in sys.modules}))
    """
)


def _probe() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-I", "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_the_verdict_path_judges_without_torch() -> None:
    found = _probe()
    assert found["torch"] is False, "a module of the verdict path imports torch"
    modules = found["modules"]
    assert isinstance(modules, list)
    assert {"grader.judging.judge", "grader.judging.reruns.resolve", "grader.judging.provenance"} <= set(
        modules
    )
    verdicts = found["verdicts"]
    assert isinstance(verdicts, dict)
    assert {name: v[:2] for name, v in verdicts.items()} == {
        "loss": ["logic", "float32"],
        "auto_grad": ["pass", "float64"],
        "user_grad": ["precision", "float32"],
    }, verdicts
    assert "at any precision" in verdicts["loss"][2], verdicts  # its rerun at float64: still wrong
    assert "within float32 rounding" in verdicts["user_grad"][2], verdicts


def test_the_naming_of_mistakes_does_import_torch() -> None:
    """The probe's check is no formality: naming a mistake loads torch in the same kind of interpreter."""
    probe = (
        "import sys; sys.path.insert(0, '.'); import grader.judging.naming.mistakes; "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True"]
