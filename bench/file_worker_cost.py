"""Benchmark: what a hand-in costs when its file is graded on several exercises, in one worker or in one each.

Usage: .venv/bin/python bench/file_worker_cost.py [--exercises 12] [--rounds 5] [--against DIR]

1. The fixed cost. A trivial hand-in (basics/reciprocal's solution) is graded on the same exercise
   `--exercises` times, at 2 trials: by `grade_file` (one worker: the file imported once) and by `grade`
   once per exercise (a worker each, as before), through one warm zygote, with the references computed
   beforehand. CPU of the whole process tree: a cpuacct cgroup this process joins before the zygote
   starts (else this process's own and the zygote's with the workers it reaped, in 10 ms ticks). The
   fixed cost per hand-in is what one exercise costs in one worker less what each further exercise adds
   to it (the slope over `--exercises`); per (hand-in, exercise) as before, the cost of a worker each.
2. The course's case: `grader check exercises/cs231n/a2 LAYERS`, LAYERS the twelve A2 solutions in one
   file as a student hands it in, references cached (a first run warms the cache), CPU of the command's
   process tree (a cpuacct cgroup of its own, else its reaped children's, which miss the sandbox's killed
   processes). `--against
   DIR` runs another checkout's grader (its code, this interpreter) in the same rounds, alternating.

The fixed cost keeps the fastest round of each (the machine's load only ever adds); the command's CPU
is given as best and median, and against another checkout as the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.exercise.reference import compute_references  # noqa: E402
from grader.exercise.settings import Settings  # noqa: E402
from grader.exercise.spec import discover_exercises, load_exercise  # noqa: E402
from grader.exercise.trials import make_trials  # noqa: E402
from grader.grading import grade, grade_file  # noqa: E402
from grader.handin.discover import submission_from_path  # noqa: E402
from grader.sandbox import cpu_watch  # noqa: E402
from grader.sandbox.warm import WorkerPool  # noqa: E402

TRIALS = 2
SEED = 0


def _tree_cpu(pool: WorkerPool, group: Path | None) -> float:
    """CPU seconds of this process and of the pool's zygotes, with the workers they forked: the cpuacct
    group this process joined (nanoseconds, everything started since), else this process's own and the
    zygotes' with the workers they reaped (/proc, in 10 ms ticks)."""
    if group is not None:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    own = resource.getrusage(resource.RUSAGE_SELF)
    zygotes = 0.0
    for zygote in pool.idle:
        zygotes += cpu_watch.seconds_of(cpu_watch.Source.of(zygote.group, zygote.process.pid))
    return own.ru_utime + own.ru_stime + zygotes


def fixed_cost(count: int, rounds: int) -> None:
    exercise = load_exercise(ROOT / "exercises" / "basics" / "reciprocal")
    path = exercise.root / str(exercise.spec.solution)
    submission = submission_from_path(path, exercise.spec.entry)
    references = compute_references(exercise, make_trials(exercise, SEED, TRIALS))
    home = _cpuacct_home()
    group = _own_group() if home is not None else None
    if group is not None:  # before the zygote starts: it and its workers are counted with this process
        (group / "cgroup.procs").write_text(str(os.getpid()))
    pool = WorkerPool(limit=1)
    pool.prestart(1)

    def one_worker(n: int) -> None:
        grade_file(
            [(exercise, submission)] * n,
            Settings(SEED, TRIALS),
            references_for=lambda e: references,
            pool=pool,
        )

    def worker_each(n: int) -> None:
        for _ in range(n):
            grade(exercise, submission, Settings(SEED, TRIALS), references=references, pool=pool)

    one_worker(1)  # the zygote warm, the code's lazy imports paid
    cases = {"one worker, 1": (one_worker, 1), f"one worker, {count}": (one_worker, count)}
    cases[f"a worker each, {count}"] = (worker_each, count)
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, (run, n) in cases.items():
            before = _tree_cpu(pool, group)
            run(n)
            best[name] = min(best[name], _tree_cpu(pool, group) - before)
    pool.close()
    if group is not None and home is not None:
        (home / "cgroup.procs").write_text(str(os.getpid()))
        time.sleep(0.3)  # the zygote's last processes leave the group
        with contextlib.suppress(OSError):
            group.rmdir()
    one, many, each = best.values()
    slope = (many - one) / (count - 1)
    print(f"fixed cost, CPU of the process tree (best of {rounds}, {TRIALS} trials an exercise):")
    for name, seconds in best.items():
        print(f"  {name:>22} exercise(s): {seconds * 1000:7.1f} ms")
    fixed = one - slope
    print(f"  one worker: {slope * 1000:.1f} ms each further exercise, {fixed * 1000:.1f} ms per hand-in")
    print(f"  a worker each: {each / count * 1000:.1f} ms per (hand-in, exercise)")


def layers_file(folder: Path) -> Path:
    """The A2 solutions in one file, as a student hands in layers.py."""
    parts = []
    for path in discover_exercises(ROOT / "exercises" / "cs231n" / "a2"):
        exercise = load_exercise(path)
        source = (exercise.root / str(exercise.spec.solution)).read_text(encoding="utf-8")
        parts.append(f"# --- {path.name}\n{source}")
    target = folder / "layers.py"
    target.write_text("\n\n".join(parts), encoding="utf-8")
    return target


_CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where the machine has it


def _cpuacct_home() -> Path | None:
    """The cpuacct group this process is in, to come back to."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(",") and (_CPUACCT / path.lstrip("/")).is_dir():
            return _CPUACCT / path.lstrip("/")
    return None


def _own_group() -> Path | None:
    group = _CPUACCT / f"file-worker-cost-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def _command_cpu(checkout: Path, layers: Path, cache: Path) -> tuple[float, float]:
    """(CPU, wall) seconds of `grader check` run from `checkout`, its whole process tree: counted by a
    cpuacct cgroup of its own where there is one (the sandbox's processes are killed, not reaped by the
    grader, so its reaped children's times miss them), else by those reaped children's."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-m", "grader", "check", "exercises/cs231n/a2", str(layers)]
    group = _own_group()

    def join() -> None:
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=checkout, env=env, capture_output=True, text=True, timeout=600, preexec_fn=join
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{checkout}: grader check failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if group is None:
        return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall
    time.sleep(0.3)  # the sandbox's last processes, killed as the grader left, leave the group
    cpu = int((group / "cpuacct.usage").read_text()) / 1e9
    with contextlib.suppress(OSError):
        group.rmdir()
    return cpu, wall


def course_check(rounds: int, against: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="file-worker-cost-") as scratch:
        folder = Path(scratch)
        layers = layers_file(folder)
        checkouts = {"this checkout": ROOT, **({str(against): against} if against is not None else {})}
        for checkout in checkouts.values():
            _command_cpu(checkout, layers, folder / "cache")  # the references cached
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
        for _ in range(rounds):
            for name, checkout in checkouts.items():
                samples[name].append(_command_cpu(checkout, layers, folder / "cache"))
    print(f"grader check exercises/cs231n/a2 layers.py, cached ({rounds} rounds, the checkouts alternating):")
    for name, runs in samples.items():
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        print(
            f"  {name}: CPU best {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s; "
            f"wall best {min(wall):.2f} s, median {statistics.median(wall):.2f} s"
        )
    if against is not None:
        # The load swings from round to round: the ratio within each round is the steadier figure.
        ratios = [ours[0] / theirs[0] for ours, theirs in zip(*samples.values(), strict=True)]
        print(f"  CPU, this checkout / {against}, per round: median {statistics.median(ratios):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercises", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout of the grader, run the same way")
    args = parser.parse_args()
    fixed_cost(args.exercises, args.rounds)
    course_check(args.rounds, args.against)


if __name__ == "__main__":
    main()
