"""A hostile class, graded as a course grades it, and checked from outside the grader afterwards.

Each attack in tests/attacks/ (and each hostile hand-in built here: links, FIFOs, files the parser cannot
hold) is a student of one `grader run -j 1` class, immediately followed in the same warm zygote by a
classmate whose correct hand-in also looks, at import, for anything the attacker left or changed. Both
isolation layers are run: bubblewrap where it works, and the base layer (`GRADER_ISOLATION=base`; as
root, an unprivileged uid per slot and Landlock). Then, from outside: every classmate got full marks;
nothing leaked into any output; nobody reached the loopback listeners; no attacker's process is alive
once any forger left has struck (20 s at most after the grader exits); results.json, the gradebook and
the CSV read the same then as at once;
nothing was planted in the grader's environment; the terminal report carries no escape sequence.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import site
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRECT_GRAPH2, GRAPH2, allow_subprocesses, copy_exercise, write_source

from grader.gradebook import default_path
from grader.sandbox import isolation, sched_attr

ATTACKS = Path(__file__).resolve().parent / "attacks"
LIMITS = "\nlimits: {trial_seconds: 2, submission_seconds: 30, import_seconds: 20, memory_mb: 2048}\n"
TRIALS = 20
TCP_PORT = 47614  # network.py connects here
ABSTRACT_SOCKET = "\0grader-attack-abstract"
FORGER = "grader-attack-forger"
AFTER_SECONDS = 20  # at most this long after the grader exits, the outcome is read again
PLANTED = "zz_grader_attack.pth"

_OWN = sched_attr.read()  # the grader's (the test's) scheduling attributes, but its nice value
_SCHED = () if _OWN is None else (_OWN.policy, _OWN.flags, _OWN.priority, _OWN.runtime, _OWN.deadline,
                                  _OWN.period, _OWN.util_min, _OWN.util_max)  # fmt: skip

# A correct graph2 that, at import, refuses to be graded if anything of the student before it is left or
# has changed what it inherits: its grade changes, and the test sees it. Its niceness is the grader's
# (the test's, which a `nice` CI runner raises), not 0.
CLASSMATE = (
    """
import ctypes, os, resource, struct

def _inherited_problems():
    problems = []
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)  # the worker sets its own soft limit (~50 s)
    if hard != resource.RLIM_INFINITY and hard < 40:
        problems.append(f"RLIMIT_CPU {hard}")
    if resource.getrlimit(resource.RLIMIT_FSIZE)[0] not in (resource.RLIM_INFINITY,) and \\
            resource.getrlimit(resource.RLIMIT_FSIZE)[0] < (1 << 20):
        problems.append("RLIMIT_FSIZE")
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 64:
        problems.append("RLIMIT_NOFILE")
    if os.getpriority(os.PRIO_PROCESS, 0) != __NICE__:
        problems.append(f"nice {os.getpriority(os.PRIO_PROCESS, 0)}")
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        problems.append("scheduler")
    getattr_call = {"x86_64": 315, "aarch64": 275}.get(os.uname().machine)
    attributes = ctypes.create_string_buffer(56)  # struct sched_attr: every scheduling attribute
    if __SCHED__ and getattr_call and ctypes.CDLL(None).syscall(getattr_call, 0, attributes, 56, 0) == 0:
        size, policy, flags, _nice, *rest = struct.unpack("=IIQiIQQQII", attributes.raw)
        if (policy, flags, *rest) != __SCHED__:  # the time slice (sched_runtime) among them
            problems.append(f"scheduling attributes {(policy, flags, *rest)}")
    if len(os.sched_getaffinity(0)) != os.cpu_count():
        problems.append("affinity")
    try:
        if int(open("/proc/self/oom_score_adj").read()) > 0:
            problems.append("oom_score_adj")
    except OSError:
        pass
    try:  # "/autogroup-N nice K": the CPU share of the session's processes
        if open("/proc/self/autogroup").read().split()[-1] != "0":
            problems.append("autogroup nice")
    except (OSError, IndexError):
        pass
    for folder in (os.getcwd(), os.environ.get("TMPDIR", "/tmp")):
        if not os.access(folder, os.W_OK):
            problems.append(f"{folder} not writable")
        elif os.listdir(folder):
            problems.append(f"{folder} holds {os.listdir(folder)}")
    if os.path.exists("/dev/shm/grader-attack-fill"):
        problems.append("/dev/shm file")
    try:
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
        if rt.mq_open(b"/grader-attack-queue", os.O_RDONLY, 0, None) >= 0:
            problems.append("message queue")
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(0x6A7, 0, 0) >= 0 or libc.msgget(0x6A7, 0) >= 0:
        problems.append("System V objects")
    keyctl = 250 if os.uname().machine == "x86_64" else 219
    for keyring in (-4, -5):  # KEYCTL_SEARCH in the user and user-session keyrings
        if libc.syscall(keyctl, 10, keyring, b"user", b"grader-attack-key", 0) > 0:
            problems.append("kernel key")
    if os.environ.get("GRADER_ATTACK_PTH"):
        problems.append(".pth ran")
    return problems

_PROBLEMS = _inherited_problems()
if _PROBLEMS:
    raise RuntimeError(f"inherited from the student before: {_PROBLEMS}")
""".replace("__NICE__", str(os.getpriority(os.PRIO_PROCESS, 0))).replace("__SCHED__", repr(_SCHED))
    + textwrap.dedent(CORRECT_GRAPH2)
)


def _attacker(attack: str) -> str:
    """A hand-in that computes graph2 right, and attacks (tests/attacks/ holds only the attacks)."""
    return (
        textwrap.dedent(CORRECT_GRAPH2).lstrip()
        + "\n"
        + (ATTACKS / f"{attack}.py").read_text(encoding="utf-8")
    )


def _grader(
    layer: str, *args: str, cwd: Path | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """The real command, in a subprocess, under `layer` ("bubblewrap" or "base")."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if layer == "base":
        env["GRADER_ISOLATION"] = "base"
    command = [sys.executable, "-m", "grader", *args]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _layers() -> list[str]:
    return ["bubblewrap", "base"] if isolation.current().level == "bubblewrap" else ["base"]


@dataclass
class Listeners:
    """A TCP listener on the host's loopback and an abstract unix socket: what reaches them is recorded."""

    received: list[str] = field(default_factory=list)
    _sockets: list[socket.socket] = field(default_factory=list)

    def start(self) -> None:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", TCP_PORT))
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(ABSTRACT_SOCKET)
        for server, name in ((tcp, "tcp"), (unix, "abstract unix")):
            server.listen(16)
            server.settimeout(0.2)
            self._sockets.append(server)
            threading.Thread(target=self._accept, args=(server, name), daemon=True).start()

    def _accept(self, server: socket.socket, name: str) -> None:
        while True:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.received.append(name)
            connection.close()

    def stop(self) -> None:
        for server in self._sockets:
            server.close()


@dataclass
class ClassRun:
    layer: str
    root: Path
    returncode: int
    lines: dict[str, dict[str, Any]]  # student -> their JSON line
    stdout: str
    stderr: str
    report: str  # `grader report`'s terminal output, afterwards
    files_at_once: dict[str, bytes]  # results.json files, gradebook.csv, right after the run
    received: list[str]
    planted: list[Path]


def _hostile_handins(submissions: Path, exercise: Path) -> dict[str, str]:
    """Hand-ins that attack the grader's reading of them; what each student must be told."""
    made = {}
    linked = submissions / "h01a_link_to_solution"
    linked.mkdir(parents=True)
    (linked / "hw.py").symlink_to(exercise / "solution.py")
    made[linked.name] = "symbolic link"
    spec_leak = submissions / "h02a_link_to_spec"
    write_source(spec_leak / "hw.py", CORRECT_GRAPH2)
    (spec_leak / "notes.py").symlink_to(exercise / "exercise.yaml")
    made[spec_leak.name] = "symbolic link"
    environ = submissions / "h03a_link_to_environ"
    environ.mkdir()
    (environ / "hw.py").symlink_to("/proc/self/environ")
    made[environ.name] = "symbolic link"
    fifo = submissions / "h04a_fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "hw.py")
    made[fifo.name] = "named pipe"
    huge_int = submissions / "h05a_notebook_huge_integer"
    huge_int.mkdir()
    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": [],
        "source": CORRECT_GRAPH2,
    }
    text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    (huge_int / "hw.ipynb").write_text(
        text.replace('"execution_count": 1', '"execution_count": ' + "7" * 5000)
    )
    made[huge_int.name] = "integer of 5000 digits"
    deep = submissions / "h06a_deep_sum"
    write_source(deep / "hw.py", CORRECT_GRAPH2)
    (deep / "helper.py").write_text("x = " + " + ".join(["1"] * 200_000) + "\n")
    made[deep.name] = ""  # graded: the sum is the helper's problem, not the grader's
    big = submissions / "h07a_huge_file"
    write_source(big / "hw.py", CORRECT_GRAPH2 + "\n# " + "x" * (9 << 20) + "\n")
    made[big.name] = "MiB"
    (submissions / "h08a_linked_folder").symlink_to(linked, target_is_directory=True)
    made["h08a_linked_folder"] = "symbolic link"
    return made


def _run_class(layer: str, root: Path) -> ClassRun:
    exercises = root / "exercises"
    exercise = copy_exercise(exercises / "graph2", append=LIMITS)
    submissions = root / "submissions"
    for k, attack in enumerate(sorted(ATTACKS.glob("*.py"))):
        write_source(submissions / f"s{k:02d}a_{attack.stem}" / "hw.py", _attacker(attack.stem))
        write_source(submissions / f"s{k:02d}b_classmate" / "hw.py", CLASSMATE)
    for name in _hostile_handins(submissions, exercise):
        write_source(submissions / f"{name[:3]}b_classmate" / "hw.py", CLASSMATE)
    before = {p: p.stat().st_mtime_ns for p in (exercise / "exercise.yaml", exercise / "solution.py")}
    listeners = Listeners()
    listeners.start()
    try:
        done = _grader(
            layer,
            "run",
            str(exercises),
            "-j",
            "1",
            "--trials",
            str(TRIALS),
            "--json",
            "--out",
            str(root / "out"),
            cwd=root,
            timeout=900,
        )
        files = {
            str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "out").rglob("*")) if p.is_file()
        }
        _wait_out_forgers()
    finally:
        listeners.stop()
    assert {p: p.stat().st_mtime_ns for p in before} == before, "the exercise's files were changed"
    report = _grader(layer, "report", str(exercises), cwd=root, timeout=120)
    lines = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            lines[record["student"]] = record
    planted = [Path(p) / PLANTED for p in {*site.getsitepackages(), site.getusersitepackages()}]
    return ClassRun(
        layer,
        root,
        done.returncode,
        lines,
        done.stdout,
        done.stderr,
        report.stdout + report.stderr,
        files,
        listeners.received,
        [p for p in planted if p.exists()],
    )


@pytest.fixture(scope="module", params=_layers())
def attacked(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassRun]:
    run = _run_class(request.param, tmp_path_factory.mktemp(f"attacks-{request.param}"))
    yield run
    for path in run.planted:
        path.unlink(missing_ok=True)
    for path in Path("/dev/shm").glob("grader-attack-*"):
        path.unlink(missing_ok=True)
    _end_survivors()


def _survivors() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                args = (proc / "cmdline").read_bytes().split(b"\0")
                if FORGER.encode() in args:
                    found.append(proc.name)
    return found


def _wait_out_forgers() -> None:
    """Gives a forger the grader left alive its time to strike before the outcome is read again: until
    none is alive, AFTER_SECONDS at most. A forger that survives sleeps 12 s, then rewrites results, its
    shell (the marked process) alive throughout; one the grader ended is no reason to wait (the fixed
    20 s sleep this replaces cost 60 s a run)."""
    deadline = time.monotonic() + AFTER_SECONDS
    while _survivors() and time.monotonic() < deadline:
        time.sleep(0.2)


def _end_survivors() -> None:
    for pid in _survivors():
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)


def test_the_whole_class_is_graded_and_nothing_crashes(attacked: ClassRun) -> None:
    assert attacked.returncode in (0, 1), attacked.stderr[-3000:]
    students = sorted(p.name for p in (attacked.root / "submissions").iterdir())
    assert sorted(attacked.lines) == students, "every student exactly once"


def test_no_classmate_is_harmed(attacked: ClassRun) -> None:
    harmed = {
        name: (line["error"], [r["message"] for r in line["returns"] if r["verdict"] != "pass"])
        for name, line in attacked.lines.items()
        if name.endswith("classmate") and line["score"] != line["max_score"]
    }
    assert not harmed, f"{attacked.layer}: {json.dumps(harmed, indent=1)[:4000]}"


def test_hand_ins_that_attack_the_reader_are_the_students_errors(attacked: ClassRun) -> None:
    solution = (GRAPH2 / "solution.py").read_text(encoding="utf-8")
    for name, line in attacked.lines.items():
        if not name.startswith("h") or name.endswith("classmate"):
            continue
        text = json.dumps(line)
        assert "def graph2" not in text and solution[:60] not in text, f"{name} leaked the solution"
        if name == "h06a_deep_sum":
            assert line["score"] == line["max_score"], line["error"]
            continue
        assert line["score"] == 0, name
        error = line["error"]
        assert isinstance(error, dict) and error["kind"] in ("missing-function", "import"), (name, error)
        want = {
            "h01a": "symbolic link",
            "h02a": "symbolic link",
            "h03a": "symbolic link",
            "h04a": "named pipe",
            "h05a": "5000 digits",
            "h07a": "MiB",
            "h08a": "symbolic link",
        }[name[:4]]
        assert want in error["message"], (name, error["message"])


def test_nothing_leaks_and_nothing_is_reached(attacked: ClassRun) -> None:
    assert "LEAK" not in attacked.stdout and "LEAK" not in attacked.stderr
    assert "LEAKED-ANSWER" not in attacked.stdout
    assert not attacked.received, f"{attacked.layer}: reached {attacked.received}"
    assert not attacked.planted, f"{attacked.layer}: planted {attacked.planted}"


def test_no_attacker_outlives_the_grader(attacked: ClassRun) -> None:
    assert not _survivors(), f"{attacked.layer}: processes left: {_survivors()}"
    assert not list(Path("/dev/shm").glob("grader-attack-*")), "a /dev/shm file was left"


def test_results_cannot_be_forged_after_the_fact(attacked: ClassRun) -> None:
    out = attacked.root / "out"
    now = {str(p.relative_to(attacked.root)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert now == attacked.files_at_once, "results changed after the grader exited"
    assert b"forged" not in b"".join(now.values())
    for path, content in now.items():
        if path.endswith(".json"):
            json.loads(content.decode("utf-8"))  # valid UTF-8 and JSON
    book = default_path(attacked.root / "submissions")
    assert book.read_bytes()[:16] == b"SQLite format 3\0"


def test_student_text_reaches_the_terminal_harmless(attacked: ClassRun) -> None:
    line = attacked.lines[next(n for n in attacked.lines if "ansi_message" in n)]
    assert line["score"] == 0
    for output in (attacked.report, attacked.stderr):
        assert "\x1b" not in output and "\r" not in output and "\x07" not in output
    assert "\\x1b[2J" in attacked.report  # shown, as visible escapes
    assert ":white_check_mark: passed" in attacked.report  # as typed, not rich's emoji
    assert "\u2705" not in attacked.report + attacked.stderr


def test_gradescope_keeps_its_result_and_ships_no_solution(tmp_path: Path) -> None:
    """An /autograder-like tree built by gradescope/build.sh; hostile hand-ins through `grader gradescope`."""
    root = Path(__file__).resolve().parent.parent
    exercises = tmp_path / "course"
    allow_subprocesses(exercises)  # the forger's daemon: what must hold where a course allows children
    copy_exercise(exercises / "graph2", append=LIMITS)
    archive = tmp_path / "autograder.zip"
    subprocess.run(
        ["bash", str(root / "gradescope" / "build.sh"), str(exercises), str(archive)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    source = tmp_path / "autograder" / "source"
    shutil.unpack_archive(archive, source)
    shipped = [p.name for p in (source / "exercises").rglob("*") if p.is_file()]
    # the spec, its course.yaml and the helpers it declares (graph2's util.py and plots.py), no solution
    assert sorted(shipped) == ["course.yaml", "exercise.yaml", "plots.py", "util.py"], shipped
    written: dict[Path, bytes] = {}
    for attack in ("late_forger", "read_secrets", "kill_grader", "write_classmates"):
        submission = tmp_path / "autograder" / f"submission-{attack}"
        write_source(submission / "hw.py", _attacker(attack))
        for layer in _layers():
            results = tmp_path / "autograder" / f"results-{attack}-{layer}" / "results.json"
            done = _grader(
                layer,
                "gradescope",
                str(source / "exercises"),
                "--submission",
                str(submission),
                "--results",
                str(results),
                "--trials",
                str(TRIALS),
            )
            assert done.returncode == 0, done.stderr[-2000:]
            first = written[results] = results.read_bytes()
            graded = json.loads(first)
            assert graded["max_score"] == 10 and graded["score"] <= 10, (attack, layer)
            if attack in ("late_forger", "write_classmates"):  # they compute right: their grade stands
                assert graded["score"] == 10, (attack, layer, graded["output"])
            assert "LEAK" not in json.dumps(graded)
    _wait_out_forgers()  # the forger's time to strike, for every results file at once
    assert {path: path.read_bytes() for path in written} == written, "a results.json was rewritten"
    assert not _survivors()


@pytest.mark.parametrize("layer", _layers())
def test_a_student_checking_an_attack_gets_an_answer_and_leaves_nothing(layer: str, tmp_path: Path) -> None:
    """`grader check`, as a student runs it: a hand-in that links to the solution is refused, naming the
    link; attacks on the grader leave its answer standing and nothing behind."""
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "hw.py").symlink_to(GRAPH2 / "solution.py")
    refused = _grader(layer, "check", str(GRAPH2), str(linked), timeout=120)
    assert refused.returncode == 2 and "symbolic link" in refused.stderr, refused.stderr
    assert "def graph2" not in refused.stdout + refused.stderr
    for attack in ("kill_grader", "prlimit_parent_files", "late_forger"):
        path = write_source(tmp_path / attack / "hw.py", _attacker(attack))
        done = _grader(layer, "check", str(GRAPH2), str(path), "--trials", str(TRIALS), "--json")
        assert done.returncode in (0, 1), (attack, done.stderr[-2000:])
        result = json.loads(done.stdout)
        assert result["max_score"] == 10 and "LEAK" not in done.stdout
    time.sleep(1)
    survivors = _survivors()
    _end_survivors()
    assert not survivors, f"{layer}: left {survivors}"
