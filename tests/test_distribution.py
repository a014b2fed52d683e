"""The grader as a course gets it: the built sdist and wheel, the Gradescope image built from them, and a
student's environment with nothing of this repository in it.

One environment for the module, made as Gradescope makes it: gradescope/build.sh zips the grader's wheel,
the pinned CPU torch wheel and an exercise; the zip's setup.sh installs them into a fresh virtual
environment under tmp (no root, no apt). Its size and versions are checked, run_autograder grades a
submission in it, and then, with nbclient and ipykernel added, it is the student's: `grader handout`,
`grader check` on the handout and `grader.check(...)` in a notebook's kernel give the verdicts the
instructor's `grader run` gives the same files in the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import EXERCISES, GRAPH2, ROOT, grader_command

AFFINE = EXERCISES / "cs231n" / "a2" / "affine"
TRIALS = 20
# (exercise folder, exercise id, the student's file as handed in, the known-wrong file it holds)
HAND_INS = {
    "graph2": (GRAPH2, "graph2", "graph2.py", GRAPH2 / "wrong" / "transpose.py"),
    "affine": (AFFINE, "cs231n.a2.affine", "layers.py", AFFINE / "wrong" / "db_mean.py"),
}


def _pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pairs = (line.split("#")[0].strip().split("==") for line in lines)
    return {pair[0].lower(): pair[1] for pair in pairs if len(pair) == 2}


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would let another Python find this repository's grader."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return env | extra


def _run(
    command: list[str | Path], cwd: Path, timeout: float = 600, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=_clean_env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _build(tmp: Path, hook: str, source: Path, out: Path) -> Path:
    """A PEP 517 hook of setuptools run on `source` (what `python -m build --no-isolation` runs)."""
    out.mkdir(parents=True, exist_ok=True)
    code = f"from setuptools import build_meta; print(build_meta.{hook}({str(out)!r}))"
    done = _run([sys.executable, "-c", code], source, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


def _package_files() -> set[str]:
    package = ROOT / "grader"
    return {
        p.relative_to(ROOT).as_posix()
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path  # built from the sdist, as `python -m build` does


@dataclass(frozen=True)
class Image:
    root: Path  # stands for /autograder
    venv: Path
    zip: Path
    setup_log: str


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp = tmp_path_factory.mktemp("dist")
    source = tmp / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, source / name)
    shutil.copytree(ROOT / "grader", source / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    sdist = _build(tmp, "build_sdist", source, tmp / "dist")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp / "unpacked", filter="data")
    (unpacked,) = (tmp / "unpacked").iterdir()
    return Built(sdist, _build(tmp, "build_wheel", unpacked, tmp / "dist"))


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    tmp = tmp_path_factory.mktemp("gradescope")
    archive = tmp / "autograder.zip"
    made = _run(["bash", ROOT / "gradescope" / "build.sh", GRAPH2, AFFINE, archive], tmp, POOL_SIZE="0")
    assert made.returncode == 0, made.stderr[-3000:]
    root = tmp / "autograder"
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(root / "source")
    venv = root / "venv"
    python = getattr(sys, "_base_executable", sys.executable)
    setup = _run(
        ["bash", root / "source" / "setup.sh"],
        tmp,
        AUTOGRADER_ROOT=str(root),
        AUTOGRADER_VENV=str(venv),
        AUTOGRADER_NO_APT="1",
        PYTHON=python,
    )
    assert setup.returncode == 0, setup.stderr[-5000:]
    return Image(root, venv, archive, setup.stderr)


@pytest.fixture(scope="module")
def student(image: Image) -> Path:
    """The image's environment, a student's from now on: with Jupyter's kernel and client added (after
    the image's size was taken), at the pinned versions of what they share."""
    size = (image.venv / "environment-kb").read_text(encoding="utf-8")  # read before it grows
    assert int(size) > 0
    pip: list[str | Path] = [
        image.venv / "bin" / "python",
        "-m",
        "pip",
        "install",
        "-q",
        "-c",
        ROOT / "constraints.txt",
    ]
    done = _run([*pip, "nbclient", "ipykernel"], image.root)
    assert done.returncode == 0, done.stderr[-3000:]
    return image.venv


@pytest.fixture(scope="module")
def instructor(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each hand-in graded by the instructor's `grader run` in the repository, on check's trials."""
    tmp = tmp_path_factory.mktemp("instructor")
    graded = {}
    for name, (folder, _, file, wrong) in HAND_INS.items():
        submissions = tmp / name / "submissions"
        (submissions / "alice").mkdir(parents=True)
        shutil.copyfile(wrong, submissions / "alice" / file)
        command = [*grader_command(), "run", folder, "--submissions", submissions, "--seed", "0"]
        command += ["--trials", str(TRIALS), "--json", "--gradebook", tmp / name / "gradebook.sqlite"]
        done = subprocess.run(
            [str(c) for c in command], capture_output=True, text=True, timeout=300, check=False, cwd=ROOT
        )
        assert done.returncode == 1, done.stderr[-3000:]
        graded[name] = json.loads(done.stdout.splitlines()[0])
    return graded


@pytest.fixture(scope="module")
def handout(student: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The handout, written by the installed grader, outside the repository."""
    out = tmp_path_factory.mktemp("course") / "handout"
    folders = [folder for folder, *_ in HAND_INS.values()]
    done = _run([student / "bin" / "grader", "handout", *folders, out], out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _verdicts(result: dict[str, Any]) -> dict[str, tuple[str, float]]:
    return {r["name"]: (r["verdict"], r["score"]) for r in result["returns"]}


def test_the_sdist_and_the_wheel_hold_the_whole_package_under_its_distribution_name(
    built: Built, image: Image
) -> None:
    package = _package_files()
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        fields = wheel.read(metadata).decode()
        assert "grader = grader.launch:entry" in wheel.read(entry_points).decode()
    assert package <= names, sorted(package - names)
    assert "Name: gradient-grader" in fields.splitlines()
    assert any(line.startswith("Requires-Dist: torch>=2.1") for line in fields.splitlines())
    with tarfile.open(built.sdist) as sdist:
        held = {"/".join(n.split("/")[1:]) for n in sdist.getnames()}
    assert package | {"pyproject.toml", "README.md"} <= held
    # The wheel build.sh put in the zip: the same files
    with zipfile.ZipFile(image.zip) as archive:
        (shipped,) = [n for n in archive.namelist() if n.startswith("wheels/gradient_grader-")]
        inner = image.root / "source" / shipped
    with zipfile.ZipFile(inner) as wheel:
        assert {n for n in wheel.namelist() if not n.startswith("gradient_grader-")} == {
            n for n in names if not n.startswith("gradient_grader-")
        }


def test_the_image_holds_the_pinned_cpu_torch_and_numpy_and_states_its_size(image: Image) -> None:
    python = image.venv / "bin" / "python"
    probe = (
        "import json, re, torch, numpy, grader, importlib.metadata as m; "
        "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
        "'numpy': numpy.__version__, 'grader': grader.__file__, "
        "'dists': {re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version "
        "for d in m.distributions()}}))"
    )
    done = _run([python, "-c", probe], image.root)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    pins = _pins()
    assert found["torch"] == f"{pins['torch']}+cpu" and found["cuda"] is None
    assert found["numpy"] == pins["numpy"]
    assert not [d for d in found["dists"] if d.startswith("nvidia")]
    assert {d: v for d, v in found["dists"].items() if d in pins and d != "torch"} == {
        d: v for d, v in pins.items() if d != "torch"
    }
    assert Path(found["grader"]).is_relative_to(image.venv)  # the wheel's, not this repository's
    size_mb = int((image.venv / "environment-kb").read_text(encoding="utf-8")) // 1024
    assert f"holds {size_mb} MB: grader" in image.setup_log
    assert size_mb < 2048, f"the CPU image's environment takes {size_mb} MB"  # a CUDA build takes 5 GB


def test_a_submission_graded_in_the_image_states_torch_and_numpy(image: Image) -> None:
    submission = image.root / "submission"
    submission.mkdir()
    shutil.copyfile(GRAPH2 / "wrong" / "transpose.py", submission / "graph2.py")
    done = _run(
        ["bash", image.root / "source" / "run_autograder"],
        image.root,
        AUTOGRADER_ROOT=str(image.root),
        AUTOGRADER_GRADER=str(image.venv / "bin" / "grader"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((image.root / "results" / "results.json").read_text(encoding="utf-8"))
    pins = _pins()
    versions = results["extra_data"]["versions"]
    assert versions["torch"] == f"{pins['torch']}+cpu" and versions["numpy"] == pins["numpy"]
    assert f"torch {pins['torch']}+cpu, numpy {pins['numpy']}" in results["output"]
    tests = {t["name"]: t for t in results["tests"]}
    assert tests["graph2: user_grad"]["status"] == "failed" and tests["graph2: f"]["status"] == "passed"


def test_a_student_checking_the_handout_gets_the_instructors_verdicts(
    student: Path, handout: Path, instructor: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    assert not list(handout.rglob("solution.py")) and not list(handout.rglob("wrong"))
    for name, (_, exercise_id, file, wrong) in HAND_INS.items():
        mine = tmp_path / name / file
        mine.parent.mkdir()
        shutil.copyfile(wrong, mine)
        command: list[str | Path] = [
            student / "bin" / "grader",
            "check",
            exercise_id,
            mine,
            "--trials",
            str(TRIALS),
            "--json",
        ]
        done = _run(command, handout, timeout=300)
        assert done.returncode == 1, done.stderr[-3000:]
        assert _verdicts(json.loads(done.stdout)) == _verdicts(instructor[name])
    assert "logic" in {v for v, _ in _verdicts(instructor["graph2"]).values()}


def test_a_students_first_check_of_the_handout_reads_its_references_and_computes_none(
    student: Path, handout: Path, tmp_path: Path
) -> None:
    """The default check (the public seed, every trial) with an empty cache, where computing a reference
    is an error: the handout's own references serve it, in the student's installed grader."""
    for name, (_, exercise_id, file, wrong) in HAND_INS.items():
        mine = tmp_path / name / file
        mine.parent.mkdir()
        shutil.copyfile(wrong, mine)
        command: list[str | Path] = [student / "bin" / "grader", "check", exercise_id, mine, "--json"]
        empty = str(tmp_path / "cache")
        done = _run(command, handout, timeout=300, GRADER_CACHE_DIR=empty, GRADER_REFERENCES="stored")
        assert done.returncode == 1, done.stderr[-3000:]
        assert "logic" in {r["verdict"] for r in json.loads(done.stdout)["returns"]}


# Run with the student's environment's Python: a notebook of two cells (their code, then grader.check) in
# a kernel of that same Python, started in the handout's folder; prints what the check found.
NOTEBOOK_RUNNER = """
import json, os, sys
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

kernels, where, code, trials = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
os.makedirs(f"{kernels}/kernels/student")
argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
with open(f"{kernels}/kernels/student/kernel.json", "w") as f:
    json.dump({"argv": argv, "display_name": "student", "language": "python"}, f)
specs = KernelSpecManager(kernel_dirs=[f"{kernels}/kernels"])
manager = KernelManager(kernel_name="student", kernel_spec_manager=specs)
check = (
    "import grader, json\\n"
    "from grader.report.json_report import to_json_line\\n"
    f"checked = grader.check('graph2', graph2, trials={trials})\\n"
    "print(json.dumps({'file': grader.__file__, 'result': json.loads(to_json_line(checked.result))}))\\n"
)
cells = [nbformat.v4.new_code_cell(code), nbformat.v4.new_code_cell(check)]
notebook = nbformat.v4.new_notebook(cells=cells)
NotebookClient(notebook, km=manager, timeout=300, resources={"metadata": {"path": where}}).execute()
print(notebook.cells[-1].outputs[-1]["text"])
"""


def test_grader_check_in_a_notebook_of_the_installed_environment_gives_the_same_verdicts(
    student: Path, handout: Path, instructor: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    code = (GRAPH2 / "wrong" / "transpose.py").read_text(encoding="utf-8")
    command: list[str | Path] = [
        student / "bin" / "python",
        "-c",
        NOTEBOOK_RUNNER,
        tmp_path,
        handout,
        code,
        str(TRIALS),
    ]
    done = _run(command, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(found["file"]).is_relative_to(student)
    assert _verdicts(found["result"]) == _verdicts(instructor["graph2"])
