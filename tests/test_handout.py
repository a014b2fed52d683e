"""`grader handout`: every bundled exercise as students get it, with nothing of the instructor's in it (by
name or by content), a handout that still grades as the library does, and the refusal that empties it."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXERCISES, GRAPH2, grader_command

from grader.errors import UsageError
from grader.exercise.spec import SPEC_FILE, discover_exercises, load_exercise
from grader.handout import INSTRUCTOR_FIELDS, README, HandoutError, instructor_files, write_handout

AFFINE = EXERCISES / "cs231n" / "a2" / "affine"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def library_handout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("handout") / "out"
    write_handout([EXERCISES], out)
    return out


def test_every_bundled_exercise_is_handed_out_without_its_solution_wrong_files_or_reference(
    library_handout: Path,
) -> None:
    out = library_handout
    folders = discover_exercises(EXERCISES)
    assert len(folders) >= 40
    secret = {
        _digest(p) for f in folders for p in instructor_files(load_exercise(f)) if p.read_bytes().strip()
    }
    handed = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in handed if p.name in ("solution.py", "reference.py") or "wrong" in p.parts]
    assert not [p for p in handed if _digest(p) in secret]
    readme = (out / README).read_text(encoding="utf-8")
    assert "pip install gradient-grader" in readme and "grader.check(" in readme
    for word in ("**precision**", "**instability**", "**logic**", "**error**"):
        assert word in readme
    for folder in folders:
        exercise = load_exercise(folder)
        copy = out / "exercises" / folder.relative_to(EXERCISES)
        assert f"| `{exercise.id}` |" in readme
        assert f"`{exercise.spec.entry}`" in readme
        starter = exercise.spec.starter
        if starter is not None:
            assert (copy / starter).read_bytes() == (folder / starter).read_bytes()
        for support in exercise.spec.support:
            assert (copy / support).exists(), f"{copy / support}: support not handed out"
        if exercise.spec.reference is not None:  # cannot be checked without the instructor's code
            assert not (copy / SPEC_FILE).exists()
            row = next(line for line in readme.splitlines() if f"| `{exercise.id}` |" in line)
            assert "graded by the course only" in row
            continue
        handed_out = load_exercise(copy, authoring=False)  # grades as the library's: the same spec
        fields = set(INSTRUCTOR_FIELDS)
        assert handed_out.spec.model_dump(exclude=fields) == exercise.spec.model_dump(exclude=fields)
        text = (copy / SPEC_FILE).read_text(encoding="utf-8")
        assert "wrong/" not in text and "solution.py" not in text
        for wrong in exercise.spec.wrong:
            assert wrong.mistake not in text  # a known mistake's description tells the right formula


def test_a_handout_keeps_the_course_files_above_its_exercises(tmp_path: Path) -> None:
    library = tmp_path / "library"
    shutil.copytree(GRAPH2, library / "mac0460" / "graph2", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(GRAPH2.parent / "_support", library / "mac0460" / "_support")
    (library / "course.yaml").write_text("packages: [scipy]\n", encoding="utf-8")
    out = tmp_path / "out"
    write_handout([library / "mac0460" / "graph2"], out)
    # The course's folder keeps its name, so that two courses' files handed out together stay apart.
    assert (out / "library" / "course.yaml").read_text(encoding="utf-8") == "packages: [scipy]\n"
    assert (out / "library" / "mac0460" / "graph2" / SPEC_FILE).is_file()
    assert (out / "library" / "mac0460" / "_support" / "util.py").is_file()


@pytest.mark.parametrize("leak", ["a copy under another name", "a file named as the solution"])
def test_a_secret_among_the_support_files_empties_the_handout_and_is_named(tmp_path: Path, leak: str) -> None:
    library = tmp_path / "a2"
    shutil.copytree(AFFINE, library / "affine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        AFFINE.parent / "_support", library / "_support", ignore=shutil.ignore_patterns("__pycache__")
    )
    helpers = library / "_support" / "cs231n"
    if leak == "a copy under another name":
        shutil.copyfile(AFFINE / "wrong" / "db_mean.py", helpers / "layers_draft.py")
        planted, secret = "layers_draft.py", "db_mean.py"
    else:
        (helpers / "solution.py").write_text("ANSWER = 42\n", encoding="utf-8")
        planted, secret = "solution.py", "solution.py"
    out = tmp_path / "out"
    with pytest.raises(HandoutError) as raised:
        write_handout([library], out)
    message = str(raised.value)
    assert f"_support/cs231n/{planted}" in message and secret in message
    assert out.is_dir() and not list(out.iterdir())  # nothing of it left for a course to upload


def test_a_folder_that_is_not_empty_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(UsageError, match="not an empty folder"):
        write_handout([GRAPH2], out)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_the_command_writes_a_handout_that_grader_check_grades_by_id(tmp_path: Path) -> None:
    out = tmp_path / "handout"
    made = subprocess.run(
        [*grader_command(), "handout", str(GRAPH2), str(AFFINE.parent), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert "cs231n.a2.dropout" in made.stdout and "graded by the course only" in made.stdout
    assert (out / README).is_file()
    assert (out / "cs231n" / "a2" / "_support" / "cs231n" / "im2col.py").is_file()
    student = tmp_path / "student" / "graph2.py"
    student.parent.mkdir()
    shutil.copyfile(GRAPH2 / "wrong" / "transpose.py", student)
    checked = subprocess.run(
        [*grader_command(), "check", "graph2", str(student), "--trials", "5", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=out,
    )
    assert checked.returncode == 1, checked.stderr
    verdicts = {r["name"]: r["verdict"] for r in json.loads(checked.stdout)["returns"]}
    assert verdicts == {"f": "pass", "auto_grad": "pass", "user_grad": "logic"}


def test_the_command_refuses_a_leaking_handout_with_the_file_named(tmp_path: Path) -> None:
    library = tmp_path / "library"
    shutil.copytree(GRAPH2, library / "graph2", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(GRAPH2.parent / "_support", library / "_support")
    # The course's helper module holding the solution word for word: it is a support file of the spec.
    shutil.copyfile(GRAPH2 / "solution.py", library / "_support" / "util.py")
    out = tmp_path / "out"
    made = subprocess.run(
        [*grader_command(), "handout", str(library / "graph2"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 2
    said = " ".join(made.stderr.split())
    assert "_support/util.py" in said and "solution.py" in said and "nothing was handed out" in said
    assert not list(out.iterdir())
