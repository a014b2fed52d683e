"""The reference cache: a second check of an exercise reads its references back (no torch in the grader's
process), gives the same result, and never trusts a file that is not exactly what was asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import CORRECT_GRAPH2, ROOT, TRANSPOSED_GRAPH2, copy_exercise, exercise_folder, write_source

from grader.exercise.expected import References
from grader.exercise.reference_cache import computed_references, stored_references
from grader.exercise.settings import CACHE_ENV, ReferenceCache
from grader.exercise.spec import Exercise, load_exercise
from grader.exercise.trials import make_trials

# cli.main in a fresh interpreter, as `grader check` runs it; then whether the grader's process (not the
# sandboxed worker's) imported torch.
_PROBE = """
import sys
from grader.cli import main
code = main(sys.argv[1:])
print(f"probe: code={code} torch={'torch' in sys.modules}", file=sys.stderr)
"""


def _check(exercise: Path, file: Path, cache: Path, code: int) -> tuple[dict[str, Any], bool]:
    """The JSON result of `grader check --json` and whether torch was imported in the grader process."""
    env = {**os.environ, CACHE_ENV: str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "check", str(exercise), str(file), "--json", "--trials", "12"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    probe = done.stderr.strip().splitlines()[-1]
    assert probe.startswith(f"probe: code={code} "), done.stderr
    result = json.loads(done.stdout)
    for timing in ("seconds", "import_seconds"):
        del result[timing]
    return result, probe.endswith("torch=True")


Checks = list[tuple[dict[str, Any], bool]]


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Checks]:
    """A transposed graph2 checked twice (computing the references, then reading them back), then a
    correct one: a logic verdict's diagnosis computes mistakes with torch, a pass needs nothing of it."""
    folder = tmp_path_factory.mktemp("cached")
    exercise = copy_exercise(folder / "graph2")
    transposed = write_source(folder / "transposed.py", TRANSPOSED_GRAPH2)
    correct = write_source(folder / "correct.py", CORRECT_GRAPH2)
    cache = folder / "cache"
    runs = [(transposed, 1), (transposed, 1), (correct, 0)]
    return cache, [_check(exercise, file, cache, code) for file, code in runs]


def test_a_cached_check_gives_the_result_of_the_first(checks: tuple[Path, Checks]) -> None:
    cache, [(first, _), (second, _), _] = checks
    assert len(list(cache.glob("*.npz"))) == 1
    assert first["score"] < first["max_score"]  # a logic verdict: its diagnosis is compared too
    assert second == first


def test_a_cached_check_imports_no_torch_in_the_grader_process(checks: tuple[Path, Checks]) -> None:
    _, [(_, computing), _, (passed, cached)] = checks
    assert computing  # computing the references imports it: the probe sees torch where it is
    assert passed["score"] == passed["max_score"]
    assert not cached


@pytest.fixture
def exercise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Exercise:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return load_exercise(copy_exercise(tmp_path / "ex" / "graph2"))


def _same(a: References, b: References) -> bool:
    def arrays(refs: References) -> list[np.ndarray]:
        found: list[np.ndarray] = []
        for trial in refs.trials:
            found += [*trial.inputs.values(), *refs.expected[trial.index].values()]
            found += refs.spread[trial.index].values()
        return found

    def sizes(refs: References) -> list[tuple[int, dict[str, int]]]:
        return [(t.index, dict(t.sizes)) for t in refs.trials]

    return sizes(a) == sizes(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)
        for x, y in zip(arrays(a), arrays(b), strict=True)
    )


def test_stored_references_are_those_computed(exercise: Exercise) -> None:
    assert stored_references(_cache(), exercise, 0, 6) is None
    computed = computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 6))
    stored = stored_references(_cache(), exercise, 0, 6)
    assert stored is not None and _same(stored, computed)


@pytest.mark.parametrize(
    "exercise_id",
    # sizes handed out as ints (conv_param), a sampler and rejection draws, words and a vocabulary, a
    # seeded mask, integer labels, torch tensors: every kind of trial input there is
    [
        "cs231n.a2.conv_naive",
        "cs224n.a2.neg_sampling",
        "cs224n.a2.skipgram",
        "cs231n.a2.dropout",
        "softmax_ce",
        "eecs498.a2.svm_loss_naive",
    ],
)
def test_every_kind_of_trial_input_is_stored(
    exercise_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    exercise = load_exercise(exercise_folder(exercise_id))
    computed = computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 3))
    stored = stored_references(_cache(), exercise, 0, 3)
    assert stored is not None, "what was just stored is not read back"
    assert [list(t.inputs) for t in stored.trials] == [list(t.inputs) for t in computed.trials]
    assert _same(stored, computed)


def _only_file() -> Path:
    folder = _cache().folder
    assert folder is not None
    # nothing else is left there but the user's key: no half-written temporary file either
    [path] = (p for p in folder.glob("*") if not p.name.startswith(".key-"))
    return path


def test_a_corrupt_or_foreign_file_is_ignored_and_written_again(
    exercise: Exercise, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "other"))
    computed_references(_cache(), exercise, 1, make_trials(exercise, 1, 4))
    foreign = _only_file().read_bytes()  # another seed's references
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    computed = computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 4))
    path = _only_file()
    whole = path.read_bytes()
    for damaged in (b"not a zip", whole[: len(whole) // 2], foreign):
        path.write_bytes(damaged)
        assert stored_references(_cache(), exercise, 0, 4) is None
    computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 4))
    assert _only_file() == path
    stored = stored_references(_cache(), exercise, 0, 4)
    assert stored is not None and _same(stored, computed)


def test_another_seed_trial_count_trial_or_exercise_misses(exercise: Exercise) -> None:
    computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 4))
    assert stored_references(_cache(), exercise, 0, 4) is not None
    assert stored_references(_cache(), exercise, 1, 4) is None
    assert stored_references(_cache(), exercise, 0, 5) is None
    assert stored_references(_cache(), exercise, 0, 4, only=2) is None
    spec = exercise.root / "exercise.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("  g = sigmoid(u)\n", "  g = tanh(u)\n", 1), encoding="utf-8")
    assert stored_references(_cache(), load_exercise(exercise.root), 0, 4) is None
    spec.write_text(text.replace("trials:", "trials:  ", 1) + "# a comment\n", encoding="utf-8")
    assert (
        stored_references(_cache(), load_exercise(exercise.root), 0, 4) is not None
    )  # the layout changes no value
    support = exercise.root.parent / "_support" / "util.py"
    support.write_text(support.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert stored_references(_cache(), load_exercise(exercise.root), 0, 4) is None


_WRITER = """
import sys
from pathlib import Path
from grader.exercise.reference_cache import computed_references
from grader.exercise.settings import ReferenceCache
from grader.exercise.spec import load_exercise
from grader.exercise.trials import make_trials

exercise = load_exercise(Path(sys.argv[1]))
for _ in range(5):
    computed_references(ReferenceCache.from_environment(), exercise, 0, make_trials(exercise, 0, 30))
"""


def test_concurrent_writers_leave_a_whole_file(exercise: Exercise) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(exercise.root)], cwd=ROOT, env=dict(os.environ))
        for _ in range(2)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    _only_file()
    stored = stored_references(_cache(), exercise, 0, 30)
    computed = computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 30))
    assert stored is not None and _same(stored, computed)


def _forged(exercise: Exercise, seed: int, count: int, mac_key: bytes) -> bytes:
    """The cache file of these trials with every expected value zeroed, signed with `mac_key`."""
    from grader.exercise import reference_cache, reference_format

    computed = computed_references(_cache(), exercise, seed, make_trials(exercise, seed, count))
    zeroed = References(
        computed.trials,
        {i: {n: np.zeros_like(a) for n, a in e.items()} for i, e in computed.expected.items()},
        computed.spread,
    )
    key = reference_cache.key(exercise, seed, computed.trials)
    body = reference_format.encoded(exercise, zeroed, key)
    return reference_cache._MAGIC + reference_cache._mac(mac_key, key, body) + body


def test_a_file_the_grader_did_not_write_is_ignored(exercise: Exercise) -> None:
    """Whoever may write the folder (a classmate on a shared hub, code in a notebook's kernel as another
    user) cannot sign a file with this user's key: zeroed expected values are never read back."""
    real = _only_file_after(exercise)
    for mac_key in (b"\0" * 32, os.urandom(32)):
        real.write_bytes(_forged(exercise, 0, 4, mac_key))
        assert stored_references(_cache(), exercise, 0, 4) is None
    real.write_bytes(real.read_bytes()[:-1] + b"x")  # the grader's own file, one byte changed
    assert stored_references(_cache(), exercise, 0, 4) is None


def _only_file_after(exercise: Exercise) -> Path:
    computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 4))
    assert stored_references(_cache(), exercise, 0, 4) is not None
    return _only_file()


@pytest.mark.parametrize("change", ["readable by others", "another owner", "a link"])
def test_a_key_that_is_not_the_users_alone_is_not_used(exercise: Exercise, change: str) -> None:
    """A key file others can read, or one another user put in place first (knowing it), or a link to one:
    the cache is neither read nor written with it."""
    _only_file_after(exercise)
    folder = _cache().folder
    assert folder is not None
    [key] = folder.glob(".key-*")
    if change == "readable by others":
        key.chmod(0o644)
    elif change == "another owner":
        os.chown(key, 65534, 65534)
    else:
        elsewhere = folder.parent / "elsewhere-key"
        key.rename(elsewhere)
        key.symlink_to(elsewhere)
    assert stored_references(_cache(), exercise, 0, 4) is None
    computed_references(_cache(), exercise, 1, make_trials(exercise, 1, 4))
    assert stored_references(_cache(), exercise, 1, 4) is None  # nor written: it could not be read back


def test_a_process_where_student_code_may_have_run_keeps_its_references_to_itself(exercise: Exercise) -> None:
    from grader.exercise.reference_cache import untrusted_process

    untrusted_process()
    computed = computed_references(_cache(), exercise, 0, make_trials(exercise, 0, 4))
    folder = _cache().folder
    assert folder is None or not list(folder.glob("*.npz")), "written where others read"
    again = stored_references(_cache(), exercise, 0, 4)
    assert again is not None and _same(again, computed)  # its own, in memory


def _cache() -> ReferenceCache:
    """The cache as a command resolves it from the environment, which each test sets."""
    return ReferenceCache.from_environment()
