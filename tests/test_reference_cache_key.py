"""The key stored references are kept under: what determines them changes it, nothing else does (a grader
release, a YAML comment, the points), and files stored under an older key are passed over cleanly."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXERCISES, GRAPH2, copy_exercise, exercise_folder

import grader
from grader.exercise import reference_cache, reference_key
from grader.exercise.reference_cache import stored_references
from grader.exercise.settings import CACHE_ENV, ReferenceCache
from grader.exercise.spec import Exercise, discover_exercises, load_exercise

FORMAT = 2


def _key(exercise: Exercise, seed: int = 0, trials: int = 10) -> str:
    return reference_key.references_key(exercise, seed, range(trials), FORMAT)


def _edited(tmp_path: Path, old: str, new: str, source: Path = GRAPH2) -> Exercise:
    folder = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
    return load_exercise(copy_exercise(folder / source.name, [(old, new)] if old else [], source=source))


SAME = {
    "a comment": ("graph: |", "# the sigmoid layer of EP3a\ngraph: |"),
    "the layout": ("d: {min: 2, max: 9}", "d: {max: 9,   min: 2}"),
    "the title": ("title: Gradient of a sigmoid layer", "title: The gradient of a sigmoid layer"),
    "the points": ("points: {f: 2, auto_grad: 4,", "points: {f: 1, auto_grad: 5,"),
    "the trial count": ("trials: 1000", "trials: 50"),  # the key holds the trials drawn instead
    "a tolerance": ("- {name: f, value: f}", "- {name: f, value: f, rtol: 1.0e-3}"),
    "a default spelt out": ("{shape: [d, d], dist: uniform}", "{shape: [d, d], dist: uniform, std: 1.0}"),
}
CHANGED = {
    "the graph": ("  g = sigmoid(u)\n", "  g = tanh(u)\n"),
    "a size's range": ("d: {min: 2, max: 9}", "d: {min: 2, max: 8}"),
    "an input's distribution": ("{shape: [d, d], dist: uniform}", "{shape: [d, d], dist: normal}"),
    "a return": ("- {name: f, value: f}", "- {name: f, value: u}"),
    "a gradient's variable": ("grad: {of: f, wrt: W_np}}", "grad: {of: f, wrt: x_np}}"),
    "the id": ("id: graph2", "id: graph2b"),  # every trial's generator is seeded with it
}


@pytest.mark.parametrize("change", SAME)
def test_what_changes_no_reference_keeps_the_key(change: str, tmp_path: Path) -> None:
    old, new = SAME[change]
    assert _key(_edited(tmp_path, old, new)) == _key(load_exercise(GRAPH2))


@pytest.mark.parametrize("change", CHANGED)
def test_what_changes_a_reference_changes_the_key(change: str, tmp_path: Path) -> None:
    old, new = CHANGED[change]
    assert _key(_edited(tmp_path, old, new)) != _key(load_exercise(GRAPH2))


def test_the_seed_and_the_trials_drawn_change_the_key() -> None:
    exercise = load_exercise(GRAPH2)
    keys = {
        _key(exercise),
        _key(exercise, seed=1),
        _key(exercise, trials=11),
        reference_key.references_key(exercise, 0, [3], FORMAT),
    }
    assert len(keys) == 4


def _edit_file(path: Path, edit: Callable[[str], str]) -> None:
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")


def test_the_reference_file_and_support_files_are_read_by_content(tmp_path: Path) -> None:
    """dropout computes its expected values in reference.py: an edit there changes them; a bytecode
    cache left beside a support file by running it does not."""
    source = exercise_folder("cs231n.a2.dropout")
    exercise = _edited(tmp_path, "", "", source=source)
    before = _key(exercise)
    (exercise.root.parent / "_support" / "cs231n" / "__pycache__").mkdir(exist_ok=True)
    (exercise.root.parent / "_support" / "cs231n" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert _key(load_exercise(exercise.root)) == before
    _edit_file(exercise.root / "reference.py", lambda text: text.replace("x * keep / p", "x * keep / p ", 1))
    touched = _key(load_exercise(exercise.root))
    assert touched != before  # its text is what is hashed: the grader cannot tell a space from a change
    _edit_file(exercise.root / "reference.py", lambda text: text.replace("x * keep / p ", "x * keep / p", 1))
    assert _key(load_exercise(exercise.root)) == before
    support = next((exercise.root.parent / "_support" / "cs231n").glob("*.py"))
    _edit_file(support, lambda text: text + "\n# edited\n")
    assert _key(load_exercise(exercise.root)) != before


def test_the_graders_version_is_not_in_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    exercise = load_exercise(GRAPH2)
    before = _key(exercise)
    monkeypatch.setattr(grader, "__version__", "99.0.0")
    assert _key(exercise) == before


def test_the_reference_version_and_library_series_are_in_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    exercise = load_exercise(GRAPH2)
    before = _key(exercise)
    raised = reference_key.reference_version() + 1
    monkeypatch.setattr(reference_key, "reference_version", lambda: raised)
    assert _key(exercise) != before
    monkeypatch.undo()
    torch = reference_key._torch_version()
    major, minor = torch.split("+")[0].split(".")[:2]
    monkeypatch.setattr(reference_key, "_torch_version", lambda: f"{major}.{minor}.99+cu999")
    assert _key(exercise) == before  # a patch release or another build of the same series
    monkeypatch.setattr(reference_key, "_torch_version", lambda: f"{major}.{int(minor) + 1}.0")
    assert _key(exercise) != before


def test_the_reference_version_is_read_without_importing_torch() -> None:
    source = (Path(reference_key.__file__).parent / "reference.py").read_text(encoding="utf-8")
    assert re.findall(r"^REFERENCE_VERSION = (\d+)$", source, re.MULTILINE) == [
        str(reference_key.reference_version())
    ]
    from grader.exercise import reference  # the module's own constant: the one the text says

    assert reference_key.reference_version() == reference.REFERENCE_VERSION


def test_every_bundled_exercise_has_a_key() -> None:
    keys = {_key(load_exercise(folder)) for folder in discover_exercises(EXERCISES)}
    assert len(keys) == len(discover_exercises(EXERCISES))


def test_a_file_stored_under_an_older_key_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older grader's file (its key had the grader's version in it) lies in the folder: not read, not
    in the way; the references are computed again beside it."""
    from grader.exercise.reference_cache import computed_references
    from grader.exercise.trials import make_trials

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    exercise = load_exercise(GRAPH2)
    computed_references(ReferenceCache.from_environment(), exercise, 0, make_trials(exercise, 0, 3))
    [stored] = (tmp_path / "cache").glob("*.npz")
    old = stored.with_name("0" * 64 + ".npz")
    stored.rename(old)
    assert stored_references(ReferenceCache.from_environment(), exercise, 0, 3) is None
    assert reference_cache.lookup(ReferenceCache.from_environment(), exercise, 0, 3) is None
    computed_references(ReferenceCache.from_environment(), exercise, 0, make_trials(exercise, 0, 3))
    assert stored_references(ReferenceCache.from_environment(), exercise, 0, 3) is not None and old.exists()
