"""Arguments that are objects, words and lists, as CS224n's word2vec (a2) hands them out: a `dataset`
whose `sampleTokenIdx()` draws from a per-trial sequence, words for integer inputs, a word -> index dict,
list literals; and `dist: rejection`, the draws a redrawing loop keeps, so that the graph can index with
the negatives the student's code drew."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXERCISES, grade_source, line_of, write_exercise

from grader.errors import SpecError
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials
from grader.outcomes import Verdict
from grader.sandbox.worker import arguments

Run = Callable[..., subprocess.CompletedProcess[str]]

SPEC = """
    id: draws
    title: Sums of what a sampler draws, of words and of a list
    entry: pick
    args:
      - x
      - {object: sampler, methods: {sampleTokenIdx: seq, tokens: {value: [a, b, c]}}}
      - {tokens: i, vocab: &vocab [a, b, c, d]}
      - {tokens: js, vocab: *vocab}
      - {index_of: *vocab}
      - {value: [1, 2, 3]}
      - {value: null}
    sizes:
      M: {min: 3, max: 6}
    inputs:
      x: {shape: [4], dist: normal}
      seq: {shape: [M], dist: integer, low: 0, high: 3}
      i: {dist: integer, low: 0, high: 3}
      js: {shape: [2], dist: integer, low: 0, high: 3}
    graph: |
      total = sum(x[seq]) + x[i] + sum(x[js])
    returns:
      - {name: total, value: total}
      - {name: dx, grad: {of: total, wrt: x}, by_hand: true}
    trials: 30
    solution: null
    starter: null
"""

# Draws until the sampler runs out, and checks every kind of argument as the student gets it. A trial seen
# before (a rerun, the provenance run: the same x) must have drawn the same sequence, from its start.
STUDENT = """
    import numpy as np

    SEEN = {}


    def pick(x, dataset, word, words, index, numbers, nothing):
        assert dataset.tokens() == ["a", "b", "c"]
        drawn = []
        while True:
            try:
                drawn.append(dataset.sampleTokenIdx())
            except Exception as exc:
                message = str(exc)
                break
        assert drawn and all(type(v) is int for v in drawn), drawn
        assert f"sampleTokenIdx() was called a {len(drawn) + 1}th time" in message, message
        key = np.asarray(x, dtype=np.float64).tobytes()
        assert SEEN.setdefault(key, drawn) == drawn, ("another sequence for the same trial", drawn)
        assert type(word) is str and type(words) is list and all(type(w) is str for w in words)
        assert index == {"a": 0, "b": 1, "c": 2, "d": 3}, index
        assert numbers == [1, 2, 3], numbers  # a fresh list: the append below reaches no other call
        numbers.append(4)
        assert nothing is None
        picked = drawn + [index[word]] + [index[w] for w in words]
        dx = np.zeros_like(x)
        np.add.at(dx, picked, 1.0)
        return SCALE * x[picked].sum(), dx
"""


@pytest.fixture(scope="module")
def draws(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    return load_exercise(write_exercise(tmp_path_factory.mktemp("draws") / "draws", SPEC))


def test_every_kind_reaches_the_student_as_declared_and_right_code_passes(
    draws: Exercise, tmp_path: Path
) -> None:
    result = grade_source(draws, tmp_path, "ok.py", STUDENT.replace("SCALE", "1.0"), trials=30)
    assert result.error is None, result.error
    assert {r.name: r.verdict for r in result.returns} == {"total": Verdict.PASS, "dx": Verdict.PASS}, [
        r.message for r in result.returns
    ]


def test_reruns_draw_the_same_sequence_afresh(draws: Exercise, tmp_path: Path) -> None:
    # Wrong beyond rounding: every trial runs again above its precision, in the same worker. A sampler
    # shared between runs would be empty there, one drawn anew would differ: both raise in the student.
    result = grade_source(draws, tmp_path, "doubled.py", STUDENT.replace("SCALE", "2.0"), trials=30)
    total = next(r for r in result.returns if r.name == "total")
    assert total.verdict is Verdict.LOGIC, total.message
    assert "at any precision" in total.message, total.message


def test_the_worker_builds_a_fresh_sampler_of_python_ints() -> None:
    seq = np.array([3, 1, 3], dtype=np.int64)
    methods: dict[str, dict[str, Any]] = {"sampleTokenIdx": {"draws": "seq"}, "tokens": {"value": ["a", "b"]}}
    first, second = (arguments.sampler(methods, {"seq": seq}) for _ in range(2))
    drawn = [first.sampleTokenIdx() for _ in range(3)]
    assert drawn == [3, 1, 3] and all(type(v) is int for v in drawn)
    assert second.sampleTokenIdx() == 3  # its own position: one call's draws do not move another's
    exhausted = r"sampleTokenIdx\(\) was called a 4th time.* 3 draws"
    with pytest.raises(arguments.SamplerExhausted, match=exhausted):
        first.sampleTokenIdx()
    tokens = first.tokens()
    tokens.append("c")
    assert first.tokens() == ["a", "b"]  # a copy at every call
    assert seq.tolist() == [3, 1, 3]


def test_the_sampler_holds_its_methods_and_nothing_else() -> None:
    sampler = arguments.sampler({"sampleTokenIdx": {"draws": "seq"}}, {"seq": np.arange(2)})
    with pytest.raises(AttributeError, match=r"no attribute 'sample'; its methods: sampleTokenIdx\(\)"):
        _ = sampler.sample
    with pytest.raises(AttributeError):
        _ = sampler.__dict__
    with pytest.raises(AttributeError):
        sampler.extra = 1  # type: ignore[attr-defined]
    assert dir(sampler) == ["sampleTokenIdx"]
    assert "sampleTokenIdx" in repr(sampler)
    method = sampler.sampleTokenIdx
    assert type(method).__slots__ and not hasattr(method, "__dict__")


REJECTION = """
    id: rejection
    title: Negatives a redrawing loop keeps
    entry: f
    args: [U, o, {object: sampler, methods: {sampleTokenIdx: seq}}]
    sizes:
      V: {min: 2, max: 4}
      k: {min: 1, max: 6}
      M: "k + EXTRA"
    inputs:
      U: {shape: [V], dist: normal}
      o: {dist: integer, low: 0, high: V - 1, type: python}
      seq: {shape: [M], dist: integer, low: 0, high: V - 1}
      negatives: {shape: [k], dist: rejection, of: seq, reject: o}
    graph: |
      loss = sum(U[negatives])
    returns:
      - {name: loss, value: loss}
    solution: null
    starter: null
"""


@pytest.mark.parametrize("extra", [0, 3])
def test_rejection_keeps_the_first_draws_not_rejected_and_never_runs_short(
    tmp_path: Path, extra: int
) -> None:
    # With no room for rejected draws (extra 0) every o in the sequence must be mended.
    exercise = load_exercise(write_exercise(tmp_path / "r", REJECTION.replace("EXTRA", str(extra))))
    for trial in make_trials(exercise, 0, 200):
        seq, o, negatives = (trial.inputs[n] for n in ("seq", "o", "negatives"))
        kept = [int(v) for v in seq if v != int(o)][: trial.sizes["k"]]
        assert negatives.dtype == np.int64 and negatives.tolist() == kept
        assert len(kept) == trial.sizes["k"] and seq.max() < trial.sizes["V"] and seq.min() >= 0
    again = make_trials(exercise, 0, 200)  # mended the same way every time
    first = make_trials(exercise, 0, 200)
    assert all((a.inputs["seq"] == b.inputs["seq"]).all() for a, b in zip(first, again, strict=True))


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        (
            "sampleTokenIdx: seq}",
            "sampleTokenIdx: sq}",
            "args[2].methods.sampleTokenIdx",
            "'sq' is not an input",
        ),
        ("sampleTokenIdx: seq}", "sampleTokenIdx: U}", "args[2].methods.sampleTokenIdx", "dist normal input"),
        ("sampleTokenIdx: seq}", "sampleTokenIdx: o}", "args[2].methods.sampleTokenIdx", "has shape []"),
        ("sampleTokenIdx: seq}", "__class__: seq}", "args[2].methods", "method name '__class__'"),
        ("{object: sampler,", "{object: dataset,", "args[2]", "one of sampler (got 'dataset')"),
        ("{object: sampler,", "{obj: sampler,", "args[2]", "an argument is an input's name"),
        ("of: seq, reject: o}", "of: U, reject: o}", "inputs.negatives.of", "dist normal input"),
        ("of: seq, reject: o}", "of: seq, reject: seq}", "inputs.negatives.reject", "has shape [M]"),
        ("of: seq, reject: o}", "of: seq}", "inputs.negatives", "needs of"),
        (
            "shape: [k], dist: rejection",
            "shape: [k + 3], dist: rejection",
            "inputs.negatives.shape",
            "longer",
        ),
        (
            "seq: {shape: [M], dist: integer, low: 0, high: V - 1}",
            "seq: {shape: [M], dist: integer, low: 0, high: 0}",
            "inputs.negatives.of",
            "give it at least two values",
        ),
    ],
)
def test_a_wrong_object_or_rejection_is_a_spec_error_at_its_line(
    tmp_path: Path, old: str, new: str, field: str, message: str
) -> None:
    spec = REJECTION.replace("EXTRA", "2")
    assert old in spec, old
    text = spec.replace(old, new)
    folder = write_exercise(tmp_path / "bad", text)
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    error = info.value
    assert error.field == field and message in error.message, str(error)
    assert error.path == folder / "exercise.yaml"
    yaml = (folder / "exercise.yaml").read_text()
    needle = "args:" if field.startswith("args") else field.split(".")[1] + ":"
    assert error.line == line_of(yaml, needle), str(error)


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        (
            "{tokens: i, vocab: &vocab [a, b, c, d]}",
            "{tokens: i, vocab: &vocab [a, b]}",
            "args[2].tokens",
            "0 to 1",
        ),
        (
            "{tokens: i, vocab: &vocab [a, b, c, d]}",
            "{tokens: x, vocab: &vocab [a, b, c, d]}",
            "args[2].tokens",
            "dist normal",
        ),
        ("{index_of: *vocab}", "{index_of: [a, b, a]}", "args[4].index_of", "'a' is in the vocabulary twice"),
        ("{value: [1, 2, 3]}", "{value: {a: 1}}", "args[5].value", "not a mapping"),
        ("{value: [1, 2, 3]}", "{value: [[[1]]]}", "args[5].value", "two levels at most"),
    ],
)
def test_a_wrong_word_or_literal_argument_is_a_spec_error(
    tmp_path: Path, old: str, new: str, field: str, message: str
) -> None:
    assert old in SPEC, old
    folder = write_exercise(tmp_path / "bad", SPEC.replace(old, new))
    with pytest.raises(SpecError) as info:
        load_exercise(folder)
    assert info.value.field == field and message in info.value.message, str(info.value)
    assert info.value.line is not None


A2 = EXERCISES / "cs224n" / "a2"


# Through the CLI, the files whose verdicts hang on the sampler and the words (every known-wrong file of the
# library is graded by tests/test_cases.py): the repeats a fancy index loses, the draws a loop exhausts.
CLI_FILES = ("solution.py", "wrong/fancy_index.py", "wrong/distinct_negatives.py")


def _graded_files() -> list[tuple[str, str, dict[str, str]]]:
    """(exercise folder, file, verdicts due) for the object-taking exercises' solutions and CLI_FILES."""
    cases = []
    for name in ("neg_sampling", "skipgram"):
        exercise = load_exercise(A2 / name)
        cases.append((name, "solution.py", {n: "pass" for n in exercise.return_names}))
        cases += [
            (name, w.file, {n: v.value for n, v in w.expect.items()})
            for w in exercise.spec.wrong
            if w.file in CLI_FILES
        ]
    return cases


@pytest.mark.parametrize(("folder", "file", "expected"), _graded_files())
def test_a2_files_get_their_verdicts_through_the_cli(
    run_grader: Run, folder: str, file: str, expected: dict[str, str]
) -> None:
    proc = run_grader("check", A2 / folder, A2 / folder / file, "--trials", "100", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    result = json.loads(proc.stdout)
    verdicts = {r["name"]: r["verdict"] for r in result["returns"]}
    assert {n: verdicts[n] for n in expected} == expected, result["returns"]
