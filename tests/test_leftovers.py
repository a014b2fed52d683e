"""Nothing a hand-in leaves stops a later grader (issue 39), checked from outside the grader.

Each attack in tests/leftover_attacks/ is a correct graph2 that leaves something where it may write (its
scratch folder, TMPDIR, and under bubblewrap the sandbox's /tmp): a chain of 3,000 folders, 200,000
files, modes that refuse their owner, links out (to a folder of the test's, the canary), a FIFO and a
socket, immutable attributes, names that are not text; tests/attacks/sched_runtime_parent.py changes the
zygote's time slice. In both isolation layers, as `grader run -j 1` (each attacker followed in the same
slot by a classmate that refuses to be graded if it finds anything of it, or inherits its scheduling)
and as one `grader check` after another: every hand-in gets its exact grade, the canary stays whole,
and the next grader on the machine starts and grades. A grader killed mid-class (its slot left behind
with all of the above in it) does not stop the next one either: start-up is bounded and never fatal.
Every grader here runs with a TMPDIR of the test's own, where the slot folders go.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORRECT_GRAPH2, copy_exercise, write_source
from test_removal import chain, files, set_attributes

from grader.sandbox import isolation, removal, sched_attr

ATTACKS = sorted((Path(__file__).resolve().parent / "leftover_attacks").glob("*.py"))
ATTACKS.append(Path(__file__).resolve().parent / "attacks" / "sched_runtime_parent.py")
LIMITS = "\nlimits: {trial_seconds: 5, submission_seconds: 120, import_seconds: 60, memory_mb: 2048}\n"
TRIALS = "3"
ROOT = os.geteuid() == 0
_OWN = sched_attr.read()
_SCHED = None if _OWN is None else (_OWN.policy, _OWN.flags, _OWN.runtime, _OWN.deadline, _OWN.period)

# A correct graph2 that refuses to be graded (its import fails) when its scratch folder, TMPDIR or the
# sandbox's /tmp hold anything, or when its scheduling attributes are not the grader's.
CLASSMATE = (
    """
import os

def _left():
    found = []
    for place in {os.getcwd(), os.environ.get("TMPDIR", "/tmp")}:
        found += [place + "/" + name for name in os.listdir(place)]
    if os.getppid() == 1:  # in a sandbox: its /tmp is its own, but for where it binds the grader
        held = {line.split()[4].split("/")[2] for line in open("/proc/self/mountinfo")
                if line.split()[4].startswith("/tmp/")}
        found += ["/tmp/" + name for name in os.listdir("/tmp") if name not in held]
    try:
        from grader.sandbox import sched_attr
        mine = sched_attr.read()
        if __SCHED__ is not None and mine is not None:
            if (mine.policy, mine.flags, mine.runtime, mine.deadline, mine.period) != __SCHED__:
                found.append(f"scheduling attributes {mine}")
    except ImportError:
        pass
    return found

if _left():
    raise RuntimeError(f"left by the student before: {_left()[:5]}")
""".replace("__SCHED__", repr(_SCHED))
    + textwrap.dedent(CORRECT_GRAPH2)
)


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


def _attacker(attack: Path, canary: Path) -> str:
    code = attack.read_text(encoding="utf-8").replace("__CANARY__", str(canary))
    return textwrap.dedent(CORRECT_GRAPH2).lstrip() + "\n" + code


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    """A TMPDIR of the test's own (where the graders put their slot folders), that a slot's uid may
    cross; removed with the grader's own removal (shutil.rmtree would recurse into what is left)."""
    folder = Path(tempfile.mkdtemp(prefix="grader-leftovers-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        removal.remove(folder, removal.Bounds(entries=10**7, seconds=600))


@pytest.fixture
def canary() -> Iterator[Path]:
    """A folder of the grader's user that the hand-ins link to (the base layer sees it; under
    bubblewrap the link dangles): it must stay whole."""
    folder = Path(tempfile.mkdtemp(prefix="grader-canary-", dir="/tmp"))
    folder.chmod(0o755)
    (folder / "inner").mkdir()
    (folder / "inner" / "keep.txt").write_text("the grader's")
    try:
        yield folder
    finally:
        removal.remove(folder)


def _whole(canary: Path) -> bool:
    return sorted(str(p.relative_to(canary)) for p in canary.rglob("*")) == ["inner", "inner/keep.txt"]


def _grader(
    layer: str, *args: str | Path, cwd: Path, tmp: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    environment.update(env, TMPDIR=str(tmp))
    if layer == "base":
        environment["GRADER_ISOLATION"] = "base"
    return subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _exercise(root: Path) -> Path:
    return copy_exercise(root / "exercises" / "graph2", append=LIMITS)


def _checked(layer: str, exercise: Path, handin: Path, tmp: Path, **env: str) -> tuple[float, str]:
    """`grader check` of one hand-in: it must answer; its score, and what it said on stderr."""
    done = _grader(layer, "check", exercise, handin, "--trials", TRIALS, "--json", cwd=handin.parent, tmp=tmp,
                   **env)  # fmt: skip
    assert done.returncode in (0, 1), (handin.parent.name, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    result = json.loads(done.stdout)
    score: float = result["score"]
    # what the result said where it fell short, with what the grader said: the assertion's words
    told = "" if score == result["max_score"] else json.dumps([result["error"], result["returns"]])[:3000]
    return score, done.stderr + told


def _nothing_left_behind(tmp: Path, said: str) -> None:
    """No slot folder outlives its grader; what was set aside is a leftover, each reported."""
    assert sorted(tmp.glob("grader-slot-*")) == []
    for leftover in tmp.glob("grader-leftover-*"):
        assert str(leftover) in said, (leftover, said[-3000:])


@pytest.mark.parametrize("layer", _layers())
def test_a_class_that_leaves_everything_is_graded_and_the_next_grader_starts(
    layer: str, tmp_path: Path, private_tmp: Path, canary: Path
) -> None:
    exercise = _exercise(tmp_path)
    submissions = tmp_path / "submissions"
    students = []
    for number, attack in enumerate(ATTACKS):
        attacker, classmate = f"s{number:02d}a_{attack.stem}", f"s{number:02d}b_classmate"
        write_source(submissions / attacker / "hw.py", _attacker(attack, canary))
        write_source(submissions / classmate / "hw.py", CLASSMATE)
        students += [attacker, classmate]
    done = _grader(layer, "run", exercise.parent, "-j", "1", "--trials", TRIALS, "--json", cwd=tmp_path,
                   tmp=private_tmp)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    scores = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            scores[record["student"]] = (record["score"], record["error"])
    assert scores == {student: (10.0, None) for student in students}, f"{layer}: {scores}"
    assert _whole(canary)
    # The next grader on the machine: it starts, grades, and leaves nothing.
    score, said = _checked(layer, exercise, submissions / students[1] / "hw.py", private_tmp)
    assert score == 10.0
    _nothing_left_behind(private_tmp, done.stderr + said)


@pytest.mark.parametrize("layer", _layers())
def test_each_check_of_a_hand_in_that_leaves_something_is_followed_by_a_working_one(
    layer: str, tmp_path: Path, private_tmp: Path, canary: Path
) -> None:
    """`grader check` as a student runs it, one after another on the machine: each is the next grader
    after the leftover of the one before."""
    exercise = _exercise(tmp_path)
    said = ""
    for attack in ATTACKS:
        handin = write_source(tmp_path / attack.stem / "hw.py", _attacker(attack, canary))
        score, stderr = _checked(layer, exercise, handin, private_tmp)
        assert score == 10.0, (attack.stem, stderr[-3000:])
        said += stderr
    handin = write_source(tmp_path / "classmate" / "hw.py", CLASSMATE)
    score, stderr = _checked(layer, exercise, handin, private_tmp)
    assert score == 10.0, stderr[-3000:]
    _nothing_left_behind(private_tmp, said + stderr)
    assert _whole(canary)


@pytest.mark.skipif(not ROOT, reason="a job may set immutable attributes only as root")
def test_a_job_run_as_root_that_makes_its_files_immutable_leaves_nothing(
    tmp_path: Path, private_tmp: Path, canary: Path
) -> None:
    """The base layer with the grader's own uid (GRADER_SANDBOX_UID=off, as root): the job may chattr +i
    its files; the zygote clears the attribute and removes them."""
    exercise = _exercise(tmp_path)
    attack = next(a for a in ATTACKS if a.stem == "immutable")
    handin = write_source(tmp_path / "immutable" / "hw.py", _attacker(attack, canary))
    shown = _grader("base", "check", exercise, handin, "--trials", TRIALS, "--show-output", cwd=tmp_path,
                    tmp=private_tmp, GRADER_SANDBOX_UID="off")  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-3000:]
    if "IMMUTABLE set" not in shown.stdout:
        pytest.skip("this file system has no immutable attribute")
    classmate = write_source(tmp_path / "classmate" / "hw.py", CLASSMATE)
    assert _checked("base", exercise, classmate, private_tmp, GRADER_SANDBOX_UID="off")[0] == 10.0
    assert sorted(private_tmp.glob("grader-*-*-*")) == []  # nothing left, nothing set aside


def _dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def _killed_graders_slot(slot: Path, canary: Path) -> None:
    """What a grader killed mid-class may leave: its slot, with a hand-in's worst in the scratch folder."""
    scratch = slot / "scratch"
    (slot / "submission").mkdir(parents=True)
    (slot / "submission" / "hw.py").write_text("# a hand-in staged")
    scratch.mkdir()
    chain(scratch / "chain", 3000)
    files(scratch / "many", removal.MAX_ENTRIES + 20_000)  # more than one start-up removes
    (scratch / "locked" / "inner").mkdir(parents=True)
    (scratch / "locked" / "inner" / "f").write_text("x")
    (scratch / "locked" / "inner").chmod(0)
    (scratch / "locked").chmod(0)
    os.mkfifo(scratch / "fifo")
    os.symlink(canary, scratch / "canary")
    os.symlink(canary / "inner", scratch / "locked-link")
    os.mkdir(os.fsencode(scratch) + b"/\xff\n\x1b[2J")
    (scratch / "frozen.txt").write_text("x")
    set_attributes(scratch / "frozen.txt", 0x10)  # immutable, where root may


def test_a_grader_starts_whatever_a_killed_grader_left(
    tmp_path: Path, private_tmp: Path, canary: Path
) -> None:
    dead = _dead_pid()
    _killed_graders_slot(private_tmp / f"grader-slot-{dead}-x1", canary)
    chain(private_tmp / f"grader-leftover-{dead}-x0", 3000)  # set aside by an earlier grader
    exercise = _exercise(tmp_path)
    handin = write_source(tmp_path / "classmate" / "hw.py", CLASSMATE)
    first = _grader("bubblewrap", "check", exercise, handin, "--trials", TRIALS, "--json", cwd=tmp_path,
                    tmp=private_tmp)  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads(first.stdout)["score"] == 10.0
    assert sorted(private_tmp.glob("grader-slot-*")) == []  # removed, or set aside and reported:
    aside = private_tmp / f"grader-leftover-{dead}-x1"
    assert not aside.exists() or str(aside) in first.stderr, first.stderr[-3000:]
    # Each later grader removes more of what is left, within its own bounds, until nothing is.
    for _ in range(5):
        if not list(private_tmp.glob(f"grader-*-{dead}-*")):
            break
        assert _checked("bubblewrap", exercise, handin, private_tmp)[0] == 10.0
    assert not list(private_tmp.glob(f"grader-*-{dead}-*"))
    assert _whole(canary)
