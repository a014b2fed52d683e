"""Benchmark: a Gradescope submission with a pool of prepared secret seeds against one with a fresh seed.

Usage: .venv/bin/python bench/gradescope_pool.py [--exercises exercises/cs231n/a2] [--submission FILE]
       [--pool-size 8] [--runs 3]

The image as Gradescope builds and runs it, with its own scripts: gradescope/build.sh's zip (POOL_SIZE
seeds) unpacked as /autograder/source below a scratch folder, its build step (prepare_pool.sh: `grader
prepare --pool`), then run_autograder on one submission, --runs times each way, alternating: with the
pool (GRADER_REFERENCES=stored: a reference computed would be an error) and without (the pool's folder
moved aside: a fresh secret seed, its references computed in the submission, as before the pool). The
submission defaults to every exercise's solution.py concatenated, as a student hands in CS231n's
layers.py. CPU of the whole process tree from a cgroup (handin_cost.CpuGroup: root, Linux).
Printed: the build's wall, CPU and disk; each run's wall, CPU and score; the medians and their ratio.

2026-12-03, this project's 2-core machine shared with other work (load 3-5), cs231n/a2 (12 exercises),
--pool-size 8 --runs 2: build 233 s wall, 118 s CPU, 140 MB (96 reference sets); a submission with the
pool 7.4 s wall, 4.6 s CPU (4.3, 4.8), with a fresh seed 45.0 s wall, 23.3 s CPU (20.8, 25.8): 5.1x the
CPU; score 93 both ways.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from handin_cost import CpuGroup

ROOT = Path(__file__).resolve().parent.parent
GRADER = Path(sys.executable).parent / "grader"


def _layers(exercises: Path, target: Path) -> Path:
    """Every exercise's solution.py, one after the other in one file."""
    parts = [p.read_text(encoding="utf-8") for p in sorted(exercises.rglob("solution.py"))]
    target.write_text("\n\n".join(parts), encoding="utf-8")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercises", type=Path, default=ROOT / "exercises" / "cs231n" / "a2")
    parser.add_argument("--submission", type=Path)
    parser.add_argument("--pool-size", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    group = CpuGroup()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            base = Path(scratch)
            archive = base / "autograder.zip"
            build = ["bash", str(ROOT / "gradescope" / "build.sh"), str(args.exercises), str(archive)]
            subprocess.run(
                build, check=True, capture_output=True, env={**os.environ, "POOL_SIZE": str(args.pool_size)}
            )
            root = base / "autograder"
            shutil.unpack_archive(archive, root / "source")
            (root / "submission").mkdir(parents=True)
            (root / "results").mkdir()
            name = args.submission.name if args.submission else "layers.py"
            if args.submission:
                shutil.copyfile(args.submission, root / "submission" / name)
            else:
                _layers(args.exercises, root / "submission" / name)
            env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
            env |= {"AUTOGRADER_ROOT": str(root), "AUTOGRADER_GRADER": str(GRADER)}
            os.environ.clear()
            os.environ.update(env)  # the cgroup's shell and what it starts inherit it
            wall, cpu, done = group.run(["bash", str(root / "source" / "prepare_pool.sh")])
            if done.returncode != 0:
                raise SystemExit(done.stdout + done.stderr)
            pool = root / "reference-pool"
            disk = sum(p.stat().st_size for p in pool.iterdir())
            print(
                f"build: prepare_pool.sh, {args.pool_size} seeds: {wall:.1f} s wall, {cpu:.1f} s CPU, "
                f"{disk / 1e6:.0f} MB"
            )
            print(f"  {done.stdout.strip().splitlines()[-1]}")
            runs: dict[str, list[tuple[float, float]]] = {"pool": [], "fresh": []}
            for _ in range(args.runs):
                for mode in ("fresh", "pool"):
                    if mode == "fresh":
                        pool.rename(base / "pool-aside")
                    os.environ["GRADER_REFERENCES"] = "stored" if mode == "pool" else ""
                    wall, cpu, done = group.run(["bash", str(root / "source" / "run_autograder")])
                    if mode == "fresh":
                        (base / "pool-aside").rename(pool)
                    results = (root / "results" / "results.json").read_text(encoding="utf-8")
                    score = results.split('"score": ', 1)[1].split(",", 1)[0]
                    configuration = "configuration error" in results
                    print(
                        f"  {mode:5}: {wall:5.1f} s wall, {cpu:5.1f} s CPU, score {score}"
                        + (" (CONFIGURATION ERROR)" if configuration else "")
                    )
                    runs[mode].append((wall, cpu))
            medians = {m: tuple(statistics.median(r[i] for r in runs[m]) for i in (0, 1)) for m in runs}
            for mode, (wall, cpu) in medians.items():
                print(f"median {mode:5}: {wall:.1f} s wall, {cpu:.1f} s CPU")
            fresh, pooled = medians["fresh"], medians["pool"]
            print(f"fresh / pool: {fresh[0] / pooled[0]:.1f}x wall, {fresh[1] / pooled[1]:.1f}x CPU")
    finally:
        group.remove()


if __name__ == "__main__":
    main()
