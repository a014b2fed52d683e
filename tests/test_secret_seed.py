"""A grading that counts draws a secret seed (issue 30, family 1): a hand-in that is a table of one seed's
answers scores nothing, in `grader run`
(both isolation layers, and on a Dask cluster) and in `grader gradescope`; the seed is in every result,
kept with an unchanged hand-in's result, and replays a failing trial. All through the real CLI."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import (
    TRANSPOSED_GRAPH2,
    copy_exercise,
    grader_run,
    without_top_level_block,
    write_source,
)

from grader.exercise.reference import compute_references
from grader.exercise.seed_pool import SEEDS_FILE, SeedPool, read_pool, write_pool
from grader.exercise.settings import CACHE_ENV, POLICY_ENV, STORED_ONLY
from grader.exercise.spec import EXERCISES_ENV, load_exercise
from grader.exercise.trials import make_trials

TRIALS = 10
SEEDS = (0, 1, 2, 3)
LAYERS = ("bubblewrap", "base")
RETURNS = ("f", "auto_grad", "user_grad")

# Answers looked up by a hash of W_np's bytes: every trial's W differs, so the key names the trial.
_TABLE_LOOKUP = """
import hashlib
import json

import numpy as np

TABLE = json.loads({table!r})


def graph2(W_np, x_np, b_np):
    got = TABLE.get(hashlib.sha256(np.ascontiguousarray(W_np).tobytes()).hexdigest())
    if got is None:  # a trial nobody recorded: nothing to copy
        d = W_np.shape[0]
        return 0.0, np.zeros((d, d)), np.zeros((d, d))
    return np.array(got["f"]), np.array(got["auto_grad"]), np.array(got["user_grad"])
"""

# The trials regenerated in the sandbox with the grader's own generator (from the exercise's spec, copied
# into the hand-in: the sandbox cannot read the exercises), and matched to answers recorded by
# (seed, trial index).
_REGENERATED = """
import tempfile
from pathlib import Path

import numpy as np

from grader.exercise.spec import load_exercise
from grader.exercise.trials import make_trial

ANSWERS = {answers!r}
_TRIALS = []


def graph2(W_np, x_np, b_np):
    if not _TRIALS:
        folder = Path(tempfile.mkdtemp())
        (folder / "exercise.yaml").write_text({spec!r}, encoding="utf-8")
        exercise = load_exercise(folder)
        _TRIALS.extend(
            (key, make_trial(exercise, int(key.split(":")[0]), int(key.split(":")[1]))) for key in ANSWERS
        )
    for key, trial in _TRIALS:
        if np.array_equal(trial.inputs["W_np"], W_np):
            got = ANSWERS[key]
            return np.array(got["f"]), np.array(got["auto_grad"]), np.array(got["user_grad"])
    d = W_np.shape[0]
    return 0.0, np.zeros((d, d)), np.zeros((d, d))
"""


def _answers(exercise_folder: Path, seeds: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    """Every trial's expected returns for these seeds, by "seed:index" (as a student records them from
    the reports, or computes them offline with the grader installed)."""
    exercise = load_exercise(exercise_folder)
    answers = {}
    for seed in seeds:
        trials = make_trials(exercise, seed, TRIALS)
        references = compute_references(exercise, trials)
        for trial in trials:
            expected = references.expected[trial.index]
            key = hashlib.sha256(np.ascontiguousarray(trial.inputs["W_np"]).tobytes()).hexdigest()
            answers[f"{seed}:{trial.index}"] = {"key": key, **{r: expected[r].tolist() for r in RETURNS}}
    return answers


def _spec(exercise_folder: Path) -> str:
    """The exercise's spec, less what names files beside it: what a student can copy from the course."""
    text = (exercise_folder / "exercise.yaml").read_text(encoding="utf-8")
    for block in ("solution", "starter", "support", "wrong", "misconceptions"):
        text = without_top_level_block(text, block)
    return text + "solution: null\nstarter: null\n"


def _table(answers: dict[str, dict[str, Any]], seeds: tuple[int, ...]) -> str:
    mine = {a["key"]: a for k, a in answers.items() if int(k.split(":")[0]) in seeds}
    return _TABLE_LOOKUP.format(table=json.dumps(mine))


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """graph2, and a class of forgers: a table of seed 0's answers, of seeds 0-3's, and the trials of
    seeds 0-3 regenerated in the sandbox; and a student who transposes user_grad."""
    root = tmp_path_factory.mktemp("forgers")
    exercise = copy_exercise(root / "exercises" / "graph2")
    answers = _answers(exercise, SEEDS)
    submissions = root / "submissions"
    write_source(submissions / "table0" / "hw.py", _table(answers, (0,)))
    write_source(submissions / "table0123" / "hw.py", _table(answers, SEEDS))
    regenerated = _REGENERATED.format(
        answers={k: {r: a[r] for r in RETURNS} for k, a in answers.items()}, spec=_spec(exercise)
    )
    write_source(submissions / "regenerated" / "hw.py", regenerated)
    write_source(submissions / "transposed" / "hw.py", TRANSPOSED_GRAPH2)
    yield root


FORGERS = ("table0", "table0123")
# Regenerating the trials needs the grader's own modules, which the sandbox walls off where it walls
# imports (sandbox/course_view.py): that forger fails at import whatever the seed.
WALLED_FORGER = "regenerated"


def _env(layer: str, cache: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRADER_ISOLATION", None)
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    if cache is not None:
        env[CACHE_ENV] = str(cache)
    return env


def _grader(
    *args: str | Path, cwd: Path, layer: str = "bubblewrap", cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return grader_run(*args, cwd=cwd, env=_env(layer, cache))


def _run(
    course: Path, book: str, *args: str, layer: str = "bubblewrap", cache: Path | None = None
) -> dict[str, dict[str, Any]]:
    """`grader run --json` on the class, with its own gradebook `book`: each student's result."""
    done = _grader(
        "run", course / "exercises", "--trials", str(TRIALS), "--json", "--gradebook", course / book,
        *args, cwd=course, layer=layer, cache=cache,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return {r["student"]: r for r in map(json.loads, done.stdout.splitlines())} | {
        "": {"stderr": " ".join(done.stderr.split())}
    }


# A class run with a secret seed, on bubblewrap, is graded once and read by every test that needs one
# (each class run is a sandboxed grading of the whole class): the known-answers test's secret run, the
# first of the two runs that draw different seeds (whose gradebook the rerun reads), the run whose failing
# trial is replayed, and the run that must leave its reference cache (a folder of its own) empty.
SECRET_BOOK = "secret-bubblewrap.sqlite"


def _secret_cache(course: Path) -> Path:
    """The reference cache of the shared secret run alone: no other run writes there."""
    return course / "secret-cache"


@pytest.fixture(scope="module")
def secret(course: Path) -> dict[str, dict[str, Any]]:
    """The shared class run with a secret seed (bubblewrap), in its gradebook SECRET_BOOK."""
    return _run(course, SECRET_BOOK, cache=_secret_cache(course))


@pytest.fixture(scope="module")
def secret_base(course: Path) -> dict[str, dict[str, Any]]:
    """The shared class run with a secret seed on the base layer: the known-answers test's secret run there,
    and the other run of the two that draw different seeds (runs of the same class, each with its own
    gradebook, as before; the layer has no say in the seed)."""
    return _run(course, "secret-base.sqlite", layer="base")


# Likewise one class run with the explicit seed 7 (its own reference cache): the run that the next one with
# seed 7 must reproduce, and the run whose references are cached.
SEVEN_BOOK = "seven-a.sqlite"


def _seven_cache(course: Path) -> Path:
    return course / "seven-cache"


@pytest.fixture(scope="module")
def seven(course: Path) -> dict[str, dict[str, Any]]:
    """The shared class run with --seed 7, in its gradebook SEVEN_BOOK."""
    return _run(course, SEVEN_BOOK, "--seed", "7", cache=_seven_cache(course))


@pytest.mark.parametrize("layer", LAYERS)
def test_a_table_of_known_answers_scores_nothing_in_a_class_run(
    course: Path, layer: str, request: pytest.FixtureRequest
) -> None:
    known = _run(course, f"known-{layer}.sqlite", "--seed", "0", layer=layer)
    for forger in FORGERS:  # with the seed known in advance, every forgery is full marks
        assert known[forger]["score"] == known[forger]["max_score"] == 10, known[forger]
    walled = known[WALLED_FORGER]
    if "imports walled" in walled["isolation"]:
        assert walled["score"] == 0 and walled["error"]["kind"] == "import", walled
        # bubblewrap shows no such module; Landlock refuses to read it
        said = walled["error"]["traceback"]
        assert "No module named 'grader.exercise'" in said or "grader/exercise/__init__.py" in said, said
    else:
        assert walled["score"] == 10, walled
    # each layer's secret run is a shared one (its fixture, only where this case needs it)
    secret = request.getfixturevalue("secret" if layer == "bubblewrap" else "secret_base")
    for forger in FORGERS:
        assert secret[forger]["score"] == 0, secret[forger]
        assert {r["verdict"] for r in secret[forger]["returns"]} == {"logic"}
    seeds = {secret[s]["seed"] for s in FORGERS}
    assert len(seeds) == 1 and seeds != {0}  # one seed for the run, shared by its hand-ins
    (seed,) = seeds
    assert f"seed {seed} (secret, drawn for this run" in secret[""]["stderr"]
    assert f"--seed {seed}" in secret[""]["stderr"]


def test_a_table_of_known_answers_scores_nothing_on_a_dask_cluster(course: Path) -> None:
    pytest.importorskip("distributed")
    secret = _run(course, "cluster.sqlite", "--cluster", "local:2")
    for forger in FORGERS:
        assert secret[forger]["score"] == 0, secret[forger]
    assert len({secret[s]["seed"] for s in FORGERS}) == 1


def _results_path(course: Path, student: str, *seed: str) -> Path:
    return course / "gradescope" / f"{student}{''.join(seed)}" / "results.json"


def _gradescope(course: Path, student: str, *seed: str) -> tuple[dict[str, Any], str]:
    results = _results_path(course, student, *seed)
    done = _grader(
        "gradescope", course / "exercises", "--submission", course / "submissions" / student,
        "--results", results, "--trials", str(TRIALS), *seed, cwd=course,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(results.read_text(encoding="utf-8")), " ".join(done.stderr.split())


@pytest.mark.parametrize("forger", FORGERS)
def test_a_table_of_known_answers_scores_nothing_on_gradescope(course: Path, forger: str) -> None:
    known, _ = _gradescope(course, forger, "--seed", "0")
    assert known["score"] == 10, known["output"]
    first, log = _gradescope(course, forger)
    assert first["score"] == 0
    again, _ = _gradescope(course, forger)
    assert again["score"] == 0
    seeds = [re.search(r"--seed (\d+) --trial", json.dumps(results)) for results in (first, again)]
    assert seeds[0] is not None and seeds[1] is not None, "a replay line names the seed it was graded with"
    assert seeds[0][1] != seeds[1][1]  # one seed per submission
    assert "secret, drawn for this submission" in log


def _pool(course: Path) -> tuple[int, ...]:
    """A pool of 2 secret seeds for the class (grader prepare --pool), in course/pool: its seeds."""
    if not (course / "pool" / SEEDS_FILE).is_file():
        done = _grader(
            "prepare", course / "exercises", "--trials", str(TRIALS), "--pool", "pool", "--pool-size", "2",
            cwd=course,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return read_pool(course / "pool").seeds


@contextlib.contextmanager
def _drawing(course: Path, seed: int) -> Iterator[None]:
    """Every submission draws `seed` of the pool (its seeds.json names that one alone), then the pool as
    it was: what a student who resubmits gets, seed after seed, forced."""
    whole = read_pool(course / "pool")
    write_pool(course / "pool", SeedPool(seeds=(seed,), trials=whole.trials))
    try:
        yield
    finally:
        write_pool(course / "pool", whole)


def _numbers(text: str) -> set[int]:
    """Every integer written in `text`, in decimal or hexadecimal: each seed a student could read there."""
    decimal = {int(n) for n in re.findall(r"\d+", text)}
    return decimal | {int(n, 16) for n in re.findall(r"(?i)[0-9a-f]{8,}", text)}


RESUBMITTERS = ("table0123", "transposed")
Graded = tuple[dict[str, Any], str, str]  # results.json read, the log, and results.json's every byte


@pytest.fixture(scope="module")
def resubmissions(course: Path) -> dict[tuple[int, str], Graded]:
    """Gradescope with the pool (grader prepare --pool), every seed of it forced in turn, under
    $GRADER_REFERENCES=stored (a reference computed would be an error): a table (full marks on the seeds it
    knows) and a wrong hand-in (failures with replay lines), by (seed, student). Graded once: what the
    resubmitting student is shown, and the wrong hand-in's grading the staff replay."""
    seeds = _pool(course)
    graded: dict[tuple[int, str], Graded] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(POLICY_ENV, STORED_ONLY)
        for seed in seeds:
            with _drawing(course, seed):
                for student in RESUBMITTERS:
                    results, log = _gradescope(course, student, "--pool", "pool")
                    # Every byte the student is shown (results.json), as Gradescope reads it.
                    shown = _results_path(course, student, "--pool", "pool").read_text(encoding="utf-8")
                    graded[seed, student] = (results, log, shown)
    return graded


def test_a_student_who_resubmits_learns_no_seed_of_the_pool(
    course: Path, resubmissions: dict[tuple[int, str], Graded], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gradescope with a pool of seeds prepared with the image (grader prepare --pool), which come back
    submission after submission. A hostile student resubmits until every seed of the pool has graded them
    (forced: each seed in turn), their tables and a wrong hand-in whose failures come with replay lines,
    and keeps every byte Gradescope shows them: no seed of the pool is in it (its stdout, which holds the
    seed for the staff, is hidden), so the only tables they can build are of seeds they know, which score
    nothing. The seeds are worth hiding: a table of the pool's own seeds scores in full."""
    seeds = _pool(course)
    monkeypatch.setenv(POLICY_ENV, STORED_ONLY)  # a reference computed would be an error
    shown: list[str] = []
    for seed in seeds:
        for student in RESUBMITTERS:
            results, log, every_byte = resubmissions[seed, student]
            shown.append(every_byte)
            assert results["stdout_visibility"] == "hidden"  # the log: the staff's alone
            assert all(t["visibility"] == "visible" for t in results["tests"])
            assert f"seed {seed} (secret, drawn for this submission from the pool" in log, log
            assert results["score"] == 0 if student in FORGERS else results["score"] < 10, results
    assert len(shown) == len(resubmissions) == 2 * len(seeds)
    seen = "\n".join(shown)
    assert "--seed" not in seen and "grader check graph2 hw.py" in seen  # the replay the student gets
    learnt = _numbers(seen) & set(seeds)
    assert not learnt, f"a result shows the pool's seeds {learnt}"
    assert {int(n) for n in re.findall(r"--seed (\d+)", seen)} <= set(SEEDS)  # what they know: 0-3
    answers = _answers(course / "exercises" / "graph2", seeds)
    table = write_source(course / "submissions" / "table_pool" / "hw.py", _table(answers, seeds))
    try:
        pooled, _ = _gradescope(course, "table_pool", "--pool", "pool")
    finally:
        shutil.rmtree(table.parent)  # not one of the class the other tests grade
    assert pooled["score"] == 10  # what a seed shown would have given away


def test_the_staff_replay_a_pool_submission_with_the_seed_in_its_log(
    course: Path, resubmissions: dict[tuple[int, str], Graded], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The autograder's output (Gradescope's "Autograder Output", which the student does not see) names the
    pool's seed and the commands that replay each failing return; run where the exercises are, with the
    student's file downloaded, `grader repro` gives the failing case the student was shown."""
    seeds = _pool(course)
    # the wrong hand-in's grading with the pool (its first seed forced: the shared resubmissions)
    results, log, _ = resubmissions[seeds[0], "transposed"]
    drawn = re.search(r"seed (\d+) \(secret, drawn for this submission from the pool", log)
    assert drawn is not None and int(drawn.group(1)) in seeds, log
    seed = int(drawn.group(1))
    failed = results["tests"]
    (user_grad,) = [t for t in failed if t["name"] == "graph2: user_grad"]
    case = re.search(r"Smallest failing case:\*\* trial (\d+) \(([^)]*)\)", user_grad["output"])
    assert case is not None, user_grad["output"]
    command = f"grader repro graph2 hw.py --seed {seed} --trial {case[1]}"
    assert f"replay (staff): {command}" in log, log
    monkeypatch.setenv(EXERCISES_ENV, str(course / "exercises"))
    replay = _grader(*command.split()[1:], "--json", cwd=course / "submissions" / "transposed")
    assert replay.returncode == 1, replay.stderr
    replayed = {r["name"]: r for r in json.loads(replay.stdout)["returns"]}
    assert replayed["user_grad"]["verdict"] == "logic"
    assert replayed["user_grad"]["score"] == user_grad["score"] == 0
    assert replayed["user_grad"]["smallest_failing_case"]["trial"] == int(case[1])
    assert f"--seed {seed}" in replayed["user_grad"]["smallest_failing_case"]["repro"]


def test_two_runs_draw_different_seeds_and_a_rerun_keeps_each_result_and_seed(
    course: Path, secret: dict[str, dict[str, Any]], secret_base: dict[str, dict[str, Any]]
) -> None:
    first = secret  # the shared secret run: its gradebook SECRET_BOOK
    other = secret_base  # the other shared secret run of the class
    assert first["transposed"]["seed"] != other["transposed"]["seed"]
    with sqlite3.connect(course / SECRET_BOOK) as db:  # the instructor finds it in the gradebook too
        # (this test is the only one that runs again on the shared run's gradebook, below)
        assert db.execute("SELECT seed FROM runs").fetchall() == [(first["transposed"]["seed"],)]
    again = _run(course, SECRET_BOOK)
    assert "0 hand-ins graded, 4 unchanged" in again[""]["stderr"]
    for student in (*FORGERS, "transposed"):
        assert again[student]["seed"] == first[student]["seed"]
        assert again[student]["returns"] == first[student]["returns"]


def test_an_explicit_seed_reproduces_a_run(course: Path, seven: dict[str, dict[str, Any]]) -> None:
    one = seven  # the shared run with --seed 7: its gradebook SEVEN_BOOK, its references in its own cache
    two = _run(course, "seven-b.sqlite", "--seed", "7", cache=_seven_cache(course))
    for student in (*FORGERS, "transposed"):
        assert one[student]["seed"] == two[student]["seed"] == 7
        assert one[student]["returns"] == two[student]["returns"]
    assert "seed 7;" in one[""]["stderr"] and "(secret" not in one[""]["stderr"]
    again = _run(course, SEVEN_BOOK, "--seed", "7")  # the gradebook keys on 7: nothing to regrade
    assert "0 hand-ins graded, 4 unchanged" in again[""]["stderr"]


def test_the_recorded_seed_replays_a_failing_trial(course: Path, secret: dict[str, dict[str, Any]]) -> None:
    graded = secret["transposed"]  # the shared secret run
    (failed,) = [r for r in graded["returns"] if r["verdict"] != "pass"]
    case = failed["smallest_failing_case"]
    assert f"--seed {graded['seed']} --trial {case['trial']}" in case["repro"]
    replay = _grader(
        "repro", course / "exercises" / "graph2", course / "submissions" / "transposed",
        "--seed", str(graded["seed"]), "--trial", str(case["trial"]), "--json", cwd=course,
    )  # fmt: skip
    assert replay.returncode == 1, replay.stderr
    (replayed,) = [r for r in json.loads(replay.stdout)["returns"] if r["name"] == failed["name"]]
    assert replayed["smallest_failing_case"]["sizes"] == case["sizes"]
    assert replayed["smallest_failing_case"]["failing_indices"] == case["failing_indices"]


def test_a_secret_seed_leaves_nothing_in_the_reference_cache(
    course: Path, secret: dict[str, dict[str, Any]], seven: dict[str, dict[str, Any]]
) -> None:
    """No later run draws that seed again: its references kept would only fill the disk, run by run."""
    # The shared secret run graded the class (its trial count is no matter here) with a cache of its own,
    # which no other run writes to
    cache = _secret_cache(course)
    assert not cache.exists() or not any(cache.iterdir())
    # an explicit seed is cached, as before: the next run reads it back (the shared run with --seed 7, with
    # a cache of its own, empty before it)
    assert seven["transposed"]["seed"] == 7
    assert any(_seven_cache(course).glob("*.npz"))
