"""`grader prepare`: references stored ahead, so that a grading computes none ($GRADER_REFERENCES=stored
makes a miss an error: what shows it); a pool of secret seeds for Gradescope, whose submissions draw one
and compute nothing, and which a hand-in cannot read. All through the real CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    CORRECT_GRAPH2,
    ROOT,
    copy_exercise,
    exercise_folder,
    grader_command,
    grader_run,
    write_source,
)

from grader.exercise.seed_pool import SEEDS_FILE, PoolError, read_pool
from grader.exercise.settings import CACHE_ENV, POLICY_ENV, STORED_ONLY
from grader.sandbox import isolation

TRIALS = 12
PREVIEW = 4
LAYERS = ("bubblewrap", "base") if isolation.current().level == "bubblewrap" else ("base",)


def _grader(
    *args: str | Path | int,
    cwd: Path,
    cache: str | Path | None = None,
    stored: bool = False,
    layer: str = "",
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (POLICY_ENV, "GRADER_ISOLATION")}
    if cache is not None:
        env[CACHE_ENV] = str(cache)
    if stored:
        env[POLICY_ENV] = STORED_ONLY
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    return grader_run(*args, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """graph2 (its Gradescope preview: the first PREVIEW trials), an exercise whose spec is broken, and a
    correct hand-in."""
    root = tmp_path_factory.mktemp("prepare")
    settings = f"gradescope: {{visibility: after_due_date, visible_trials: {PREVIEW}}}\n"
    copy_exercise(root / "exercises" / "graph2", append=settings)
    (root / "exercises" / "broken").mkdir()
    (root / "exercises" / "broken" / "exercise.yaml").write_text("id: broken\ntitle: no entry\n")
    write_source(root / "submission" / "graph2.py", CORRECT_GRAPH2)
    return root


def test_prepared_references_make_a_check_compute_none(course: Path) -> None:
    cache = course / "cache"
    first = _grader("prepare", "exercises", "--trials", TRIALS, cwd=course, cache=cache)
    assert first.returncode == 2, first.stderr  # the broken exercise: told, and the other one prepared
    assert "broken" in first.stderr and "this exercise is skipped" in first.stderr
    assert f"graph2: seed 0, {TRIALS} trials: computed" in first.stdout
    assert f"graph2: seed 0, {PREVIEW} trials: computed" in first.stdout  # Gradescope's preview
    assert "2 computed, 0 already stored, 1 failed" in " ".join(first.stdout.split())
    again = _grader("prepare", "exercises/graph2", "--trials", TRIALS, cwd=course, cache=cache)
    assert again.returncode == 0, again.stderr
    assert "0 computed, 2 already stored, 0 failed" in " ".join(again.stdout.split())
    check: list[str | Path | int] = [
        "check", "exercises/graph2", "submission/graph2.py", "--trials", TRIALS, "--json"
    ]  # fmt: skip
    checked = _grader(*check, cwd=course, cache=cache, stored=True)
    assert checked.returncode == 0, checked.stderr
    result = json.loads(checked.stdout)
    assert result["score"] == result["max_score"] and result["seed"] == 0
    # What was not prepared is an error under the switch, and says how to prepare it
    other = _grader(*check, "--seed", "1", cwd=course, cache=cache, stored=True)
    assert other.returncode == 2, other.stderr
    told = " ".join(other.stderr.split())
    assert "no stored references for seed 1" in told and "grader prepare" in told, told


def test_a_graph_that_fails_on_its_inputs_is_told_and_the_others_are_prepared(tmp_path: Path) -> None:
    copy_exercise(tmp_path / "hw" / "graph2", [("u = W_np @ x_np + b_np", "u = W_np @ b_np.T + x_np")])
    copy_exercise(tmp_path / "hw" / "graph1", source=exercise_folder("graph1"))
    done = _grader("prepare", "hw", "--trials", 3, cwd=tmp_path, cache=tmp_path / "cache")
    assert done.returncode == 2, done.stderr
    told = " ".join(done.stderr.split())
    assert "graph2: seed 0, 3 trials: failed" in told and "fails at d=2 (trial 0)" in told, told
    assert "graph1: seed 0, 3 trials: computed" in done.stdout
    assert "1 computed, 0 already stored, 1 failed" in " ".join(done.stdout.split())


def test_a_seed_prepared_for_a_run_is_the_one_it_uses(course: Path) -> None:
    cache = course / "cache-run"
    prepared = _grader("prepare", "exercises/graph2", "--seed", "7", "--trials", 3, cwd=course, cache=cache)
    assert prepared.returncode == 0, prepared.stderr
    checked = _grader(
        "check", "exercises/graph2", "submission/graph2.py", "--seed", "7", "--trials", 3, "--json",
        cwd=course, cache=cache, stored=True,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr


def test_prepare_says_what_it_cannot_do(course: Path) -> None:
    both = _grader("prepare", "exercises/graph2", "--seed", "1", "--pool", course / "p", cwd=course)
    assert both.returncode == 2 and "--seed and --pool" in both.stderr
    off = _grader("prepare", "exercises/graph2", cwd=course, cache="")
    assert off.returncode == 2 and "the reference cache is off" in off.stderr
    nothing = _grader("prepare", "submission", cwd=course)
    assert nothing.returncode == 2 and "no exercises here" in nothing.stderr
    # bubblewrap mounts the interpreter's prefix: a pool there would be a hand-in's to read
    shown = _grader("prepare", "exercises/graph2", "--pool", Path(sys.prefix) / "pool", cwd=course)
    assert shown.returncode == 2 and "the sandbox mounts for every hand-in" in shown.stderr, shown.stderr
    assert not (Path(sys.prefix) / "pool").exists()


@pytest.fixture(scope="module")
def pool(course: Path) -> Iterator[Path]:
    """A pool of 2 secret seeds for the course, below a folder every user may enter (/tmp's own, not
    pytest's private one): only the pool's own mode keeps others out."""
    above = Path(tempfile.mkdtemp(prefix="grader-pool-", dir="/tmp"))
    above.chmod(0o755)
    folder = above / "pool"
    done = _grader(
        "prepare", "exercises/graph2", "--trials", TRIALS, "--pool", folder, "--pool-size", "2", cwd=course
    )
    assert done.returncode == 0, done.stderr
    assert "seed 2 of the pool" in done.stdout and "a pool of 2 secret seeds" in done.stdout
    yield folder
    shutil.rmtree(above)


def _gradescope(
    course: Path, submission: Path, pool: Path, stored: bool = True, layer: str = ""
) -> tuple[dict[str, Any], str]:
    results = submission.parent / f"results-{submission.name}-{layer}" / "results.json"
    done = _grader(
        "gradescope", "exercises/graph2", "--submission", submission, "--results", results,
        "--trials", TRIALS, "--pool", pool, cwd=course, stored=stored, layer=layer,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(results.read_text(encoding="utf-8")), " ".join(done.stderr.split())


def test_a_pool_is_private_and_its_seeds_are_secret(pool: Path) -> None:
    seeds = read_pool(pool).seeds
    assert len(set(seeds)) == 2 and all(s > 1000 for s in seeds)
    assert (pool.stat().st_mode & 0o777, (pool / SEEDS_FILE).stat().st_mode & 0o777) == (0o700, 0o600)
    assert all(p.stat().st_mode & 0o077 == 0 for p in pool.iterdir())


def test_a_pool_prepared_again_keeps_its_seeds_and_computes_what_it_lacks(course: Path, pool: Path) -> None:
    seeds = read_pool(pool).seeds
    again = _grader(
        "prepare", "exercises/graph2", "--trials", TRIALS, "--pool", pool, "--pool-size", "2", cwd=course
    )
    assert again.returncode == 0, again.stderr
    assert "0 computed, 4 already stored, 0 failed" in " ".join(again.stdout.split())
    assert read_pool(pool).seeds == seeds


def test_a_submission_draws_a_seed_of_the_pool_and_computes_no_reference(course: Path, pool: Path) -> None:
    """The full grading and its preview: both stored, both read back ($GRADER_REFERENCES=stored)."""
    seeds = read_pool(pool).seeds
    results, log = _gradescope(course, course / "submission", pool)
    assert results["score"] == 10 and "configuration error" not in results["output"], results["output"]
    assert any("preview" in t["name"] for t in results["tests"])
    drawn = re.search(r"seed (\d+) \(secret, drawn for this submission", log)
    assert drawn is not None and int(drawn.group(1)) in seeds, log
    assert "seed drawn from the pool of 2" in log
    assert re.search(r"references: [1-9]\d* read back from the pool, 0 computed here", log), log


def test_a_pool_that_is_not_the_graders_alone_is_not_used(course: Path, pool: Path) -> None:
    """Its seeds may be known: a fresh secret seed instead (computed here, so not under the switch)."""
    seeds = pool / SEEDS_FILE
    seeds.chmod(0o644)
    try:
        with pytest.raises(PoolError, match="not this user's alone"):
            read_pool(pool)
        results, log = _gradescope(course, course / "submission", pool, stored=False)
    finally:
        seeds.chmod(0o600)
    assert results["score"] == 10
    assert "its seeds may be known — a fresh secret seed instead" in log
    assert re.search(r"references: 0 read back \(a fresh seed\), [1-9]\d* computed here", log), log
    drawn = re.search(r"seed (\d+) \(secret", log)
    assert drawn is not None and int(drawn.group(1)) not in read_pool(pool).seeds


# A hand-in that looks for the pool where it knows it lies (Gradescope's path is no secret): each attempt's
# outcome, in the error it raises at import, which the student's results show.
_PROBE = """
import os


def graph2(W_np, x_np, b_np):
    raise NotImplementedError


POOL = {pool!r}
outcomes = []
for attempt in (
    lambda: os.listdir(POOL),
    lambda: open(os.path.join(POOL, "seeds.json")).read(),
    lambda: open(os.path.join(POOL, ".key-0"), "rb").read(),
):
    try:
        attempt()
        outcomes.append("read")
    except OSError as error:
        outcomes.append(type(error).__name__)
raise RuntimeError("probe " + " ".join(outcomes) + " end")
"""


@pytest.mark.parametrize("layer", LAYERS)
def test_a_hand_in_cannot_read_the_pool(course: Path, pool: Path, layer: str) -> None:
    """bubblewrap: nothing of the machine's /tmp exists inside. The base layer: the hand-in runs as
    another uid, which the pool's mode keeps out (test_a_pool_is_private_and_its_seeds_are_secret)."""
    hostile = write_source(course / f"hostile-{layer}" / "graph2.py", _PROBE.format(pool=str(pool)))
    results, _ = _gradescope(course, hostile.parent, pool, layer=layer)
    found = re.search(r"probe ((?:\w+ )+)end", results["output"])
    assert found is not None, results["output"]
    expected = "FileNotFoundError" if layer == "bubblewrap" else "PermissionError"
    assert found.group(1).split() == [expected] * 3
    assert results["score"] == 0


def test_the_image_prepares_a_pool_and_its_submissions_compute_no_reference(tmp_path: Path) -> None:
    """The image as Gradescope builds and runs it, its scripts unchanged: build.sh's zip unpacked in
    /autograder/source, setup.sh's last step (prepare_pool.sh), then run_autograder on a submission."""
    copy_exercise(tmp_path / "course" / "graph2")
    archive = tmp_path / "autograder.zip"
    env = {**os.environ, "POOL_SIZE": "2"}
    subprocess.run(
        ["bash", ROOT / "gradescope" / "build.sh", tmp_path / "course", archive],
        check=True, capture_output=True, timeout=120, env=env,
    )  # fmt: skip
    root = tmp_path / "autograder"
    shutil.unpack_archive(archive, root / "source")
    write_source(root / "submission" / "graph2.py", CORRECT_GRAPH2)
    (root / "results").mkdir()
    [grader] = grader_command()[:1]
    image = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_GRADER": grader}
    image.pop(POLICY_ENV, None)
    built = subprocess.run(
        ["bash", root / "source" / "prepare_pool.sh"], capture_output=True, text=True, timeout=600, env=image
    )
    assert built.returncode == 0, built.stderr
    assert "2 computed, 0 already stored, 0 failed" in " ".join(built.stdout.split())
    assert len(read_pool(root / "reference-pool").seeds) == 2
    ran = subprocess.run(
        ["bash", root / "source" / "run_autograder"],
        capture_output=True, text=True, timeout=600, env={**image, POLICY_ENV: STORED_ONLY},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    shown = (root / "results" / "results.json").read_text(encoding="utf-8")
    results = json.loads(shown)
    assert results["score"] == 10 and "configuration error" not in results["output"], ran.stderr
    log = " ".join(ran.stderr.split())
    assert "seed drawn from the pool of 2" in log
    # The seed is the staff's (the Autograder Output, hidden from the student), never in what they read.
    drawn = re.search(r"seed (\d+) \(secret, drawn for this submission from the pool", log)
    assert drawn is not None and int(drawn.group(1)) in read_pool(root / "reference-pool").seeds, log
    assert drawn.group(1) not in shown and results["stdout_visibility"] == "hidden"
