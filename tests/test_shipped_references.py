"""References that travel with an exercise (`grader handout`, `grader prepare --ship`): a student's first
check reads them and computes none, whatever numpy and torch release the student installed; a file that is
not what it claims (changed, cut short, another exercise's, another spec's, inputs not the seed's) is
never used. The commands through the real CLI, with $GRADER_REFERENCES=stored and an empty cache: a
reference computed would be an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, EXERCISES, copy_exercise, grader_run, write_source

from grader.exercise import reference_key, shipped_references
from grader.exercise.expected import References
from grader.exercise.reference import compute_references
from grader.exercise.settings import CACHE_ENV, POLICY_ENV, STORED_ONLY, OnMiss, ReferenceCache, Settings
from grader.exercise.shared import SharedReferences
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import DEFAULT_SEED, Trial, make_trials
from grader.grading import references_first

TRIALS = 6


@pytest.fixture
def exercise(tmp_path: Path) -> Exercise:
    return load_exercise(copy_exercise(tmp_path / "graph2"))


def _references(exercise: Exercise, count: int = TRIALS) -> References:
    return compute_references(exercise, make_trials(exercise, DEFAULT_SEED, count))


def _same(a: References, b: References) -> bool:
    if [t.index for t in a.trials] != [t.index for t in b.trials]:
        return False
    pairs = [(a.expected, b.expected), (a.spread, b.spread)]
    return all(
        np.asarray(x[i][name]).tobytes() == np.asarray(y[i][name]).tobytes()
        for x, y in pairs
        for i in x
        for name in x[i]
    )


def test_shipped_references_are_read_back_bit_for_bit_and_one_trial_is_taken_from_them(
    exercise: Exercise,
) -> None:
    computed = _references(exercise)
    written = shipped_references.ship(exercise, DEFAULT_SEED, computed)
    assert written.parent == exercise.root / shipped_references.FOLDER
    assert written.stat().st_mode & 0o044 == 0o044  # students of a shared machine read it
    found = shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS)
    assert found is not None and _same(found, computed)
    alone = shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS, only=3)
    assert alone is not None and [t.index for t in alone.trials] == [3]
    assert np.array_equal(alone.expected[3]["f"], computed.expected[3]["f"])
    # Another seed, another count, a trial past the run: not these references
    assert shipped_references.shipped(exercise, 1, TRIALS) is None
    assert shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS + 1) is None
    assert shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS, only=TRIALS) is None


def test_the_key_leaves_out_the_releases_a_student_installs(
    exercise: Exercise, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped_references.ship(exercise, DEFAULT_SEED, _references(exercise))
    cached = reference_key.references_key(exercise, DEFAULT_SEED, range(TRIALS), 2)
    monkeypatch.setattr(reference_key, "_torch_version", lambda: "9.1.0+cu999")
    monkeypatch.setattr(np, "__version__", "7.3.0")
    assert reference_key.references_key(exercise, DEFAULT_SEED, range(TRIALS), 2) != cached
    assert shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS) is not None


@pytest.mark.parametrize("damage", ["a byte changed", "cut short", "empty", "not a file"])
def test_a_damaged_file_is_not_used(exercise: Exercise, damage: str) -> None:
    written = shipped_references.ship(exercise, DEFAULT_SEED, _references(exercise))
    data = written.read_bytes()
    if damage == "a byte changed":
        at = len(data) // 2
        written.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    elif damage == "cut short":
        written.write_bytes(data[: len(data) - 100])
    elif damage == "empty":
        written.write_bytes(b"")
    else:
        written.unlink()
        written.mkdir()
    assert shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS) is None


@pytest.mark.parametrize("where", [0, TRIALS - 1])
def test_inputs_that_the_seed_does_not_draw_are_not_used(exercise: Exercise, where: int) -> None:
    """A file whose inputs are not the seed's (another numpy's generator, or edited), digest intact."""
    computed = _references(exercise)
    trials = list(computed.trials)
    changed = {name: np.array(value, copy=True) for name, value in trials[where].inputs.items()}
    changed["x_np"].flat[0] += 1.0
    trials[where] = Trial(trials[where].index, trials[where].sizes, changed)
    # Written by `ship`, digest and all: only what the file says can give it away
    shipped_references.ship(
        exercise, DEFAULT_SEED, References(tuple(trials), computed.expected, computed.spread)
    )
    assert shipped_references.shipped(exercise, DEFAULT_SEED, TRIALS) is None


def test_another_exercises_file_or_an_older_specs_is_not_used(tmp_path: Path, exercise: Exercise) -> None:
    written = shipped_references.ship(exercise, DEFAULT_SEED, _references(exercise))
    # The spec's graph changed since: its key (the file's name) changes, and the old file is not looked up
    spec = exercise.root / "exercise.yaml"
    spec.write_text(spec.read_text().replace("f = sum(g)", "f = sum(g * g)"))
    assert shipped_references.shipped(load_exercise(exercise.root), DEFAULT_SEED, TRIALS) is None
    # Renamed to the key of another exercise: its digest and header name the key it was written for
    other = load_exercise(copy_exercise(tmp_path / "other", [("id: graph2", "id: graph2b")]))
    target = shipped_references.path(other, DEFAULT_SEED, TRIALS)
    target.parent.mkdir(parents=True)
    target.write_bytes(written.read_bytes())
    assert shipped_references.shipped(other, DEFAULT_SEED, TRIALS) is None


def _student_env(cache: Path) -> dict[str, str]:
    """A student's first check: an empty cache, and a reference computed would be an error."""
    return {**os.environ, CACHE_ENV: str(cache), POLICY_ENV: STORED_ONLY}


def test_a_handouts_first_check_computes_no_reference_and_without_them_it_would(tmp_path: Path) -> None:
    course = tmp_path / "course"
    copy_exercise(course / "graph2")
    out = tmp_path / "handout"
    made = grader_run("handout", course.relative_to(tmp_path), out.relative_to(tmp_path), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    told = " ".join(made.stdout.split())
    assert "default trials for 1 exercise" in told and "a student's first check computes none" in told, told
    handed = next(p.parent for p in out.rglob("exercise.yaml"))
    assert len(list((handed / shipped_references.FOLDER).glob("*.npz"))) == 1
    student = write_source(tmp_path / "student" / "graph2.py", CORRECT_GRAPH2)
    checked = grader_run(
        "check", handed, student, "--json", env=_student_env(tmp_path / "empty"), cwd=tmp_path
    )
    assert checked.returncode == 0, checked.stderr
    result = json.loads(checked.stdout)
    assert result["score"] == result["max_score"]
    # A replay of one trial takes it from the shipped run
    replayed = grader_run(
        "repro", handed, student, "--trial", "7", env=_student_env(tmp_path / "empty"), cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    # Without them the same check would have computed references: refused, and the refusal names both places
    bare = tmp_path / "bare"
    assert grader_run("handout", course, bare, "--no-references").returncode == 0
    assert not list(bare.rglob("*.npz"))
    refused = grader_run(
        "check",
        next(p.parent for p in bare.rglob("exercise.yaml")),
        student,
        env=_student_env(tmp_path / "empty"),
        cwd=tmp_path,
    )
    assert refused.returncode == 2
    told = " ".join(refused.stderr.split())
    assert "no stored references for seed 0" in told and "shipped with the exercise" in told, told


def test_a_handouts_check_never_imports_torch_in_the_graders_process(tmp_path: Path) -> None:
    """The references at hand, a numpy exercise's check needs torch nowhere in the grader's process."""
    exercise = load_exercise(copy_exercise(tmp_path / "graph2"))
    shipped_references.ship(exercise, DEFAULT_SEED, _references(exercise, exercise.spec.trials))
    probe = (
        "import sys; from pathlib import Path\n"
        "from grader.exercise.spec import load_exercise\n"
        "from grader.exercise.settings import Settings\n"
        "from grader.exercise.sources import find_references\n"
        f"found = find_references(load_exercise(Path({str(exercise.root)!r})), Settings(0))\n"
        "print(found.ready, 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=_student_env(tmp_path / "empty")
    )
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_prepare_ships_beside_the_exercise_and_not_a_pools_seeds(tmp_path: Path) -> None:
    copy_exercise(tmp_path / "hw" / "graph2")
    cache = {**os.environ, CACHE_ENV: str(tmp_path / "cache")}
    done = grader_run("prepare", "hw", "--ship", cwd=tmp_path, env=cache)
    assert done.returncode == 0, done.stderr
    assert "graph2: grader check's references shipped in" in " ".join(done.stdout.split())
    exercise = load_exercise(tmp_path / "hw" / "graph2")
    assert shipped_references.shipped(exercise, DEFAULT_SEED, exercise.spec.trials) is not None
    both = grader_run("prepare", "hw", "--ship", "--pool", tmp_path / "pool", cwd=tmp_path, env=cache)
    assert both.returncode == 2 and "--ship and --pool" in both.stderr
    assert not (tmp_path / "pool").exists()


def test_the_repositorys_library_ships_no_references() -> None:
    """They are a handout's (17 MB for CS231n A2 alone), written where it is made, never committed."""
    assert not list(EXERCISES.rglob(f"{shipped_references.FOLDER}/*.npz"))


def test_a_check_of_several_exercises_reads_their_stored_references_ahead(tmp_path: Path) -> None:
    """Every exercise's references stored: read in a thread, in order, each handed out once read; one
    whose file does not verify is handed out as none, and its grading finds out why."""
    first = load_exercise(copy_exercise(tmp_path / "graph2"))
    second = load_exercise(copy_exercise(tmp_path / "graph2b", [("id: graph2", "id: graph2b")]))
    for exercise in (first, second):
        shipped_references.ship(exercise, DEFAULT_SEED, _references(exercise, exercise.spec.trials))
    settings = Settings(DEFAULT_SEED, cache=ReferenceCache(tmp_path / "empty", OnMiss.REFUSE))
    found = references_first([first, second], settings)
    read = [found(first), found(second)]
    assert all(isinstance(r, SharedReferences) and r.ready for r in read)
    assert all(len(r.trials) == first.spec.trials for r in read if r is not None)
    spoiled = shipped_references.path(second, DEFAULT_SEED, second.spec.trials)
    spoiled.write_bytes(spoiled.read_bytes()[:-1])
    again = references_first([first, second], settings)
    assert again(first) is not None and again(second) is None
