"""Check: the references of this tree against those of another commit, on every bundled exercise.

Usage: .venv/bin/python bench/reference_compare.py [--against cca1a1c] [--trials N] [--seed 0]
       [exercise folders...]

The other commit's grader/exercise/reference.py is read with `git show` and imported as a module of its
own (beside this tree's, sharing the rest of the package), its exercises folder extracted with `git
archive` (an instructor's reference.py may have changed too), and both compute the references of each
exercise's default trials (its `trials:` count unless --trials). Printed per exercise: how many expected
arrays are bit-identical, the largest difference of the expected values (in ulps, absolute, relative),
the range of the ratio new / old of the rounding spreads where both are non-zero (entry by entry, and of
each array's largest spread, the scale a verdict judges an array by), how many spread arrays
are bit-identical, and how many entries have a zero spread on one side only. Exit status 1 where an
expected value differs by more than one ulp.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.exercise import reference as new  # noqa: E402
from grader.exercise.spec import load_exercise  # noqa: E402
from grader.exercise.trials import make_trials  # noqa: E402


def _old(commit: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{commit}:grader/exercise/reference.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_reference.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("_old_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_exercises(commit: str) -> Path:
    """The commit's exercises folder (an instructor's reference.py may have changed with the code)."""
    folder = Path(tempfile.mkdtemp())
    archive = subprocess.run(
        ["git", "archive", commit, "exercises"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _ulps(a: np.ndarray, b: np.ndarray) -> float:
    scale = np.spacing(np.maximum(np.abs(a), np.abs(b)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ulps = np.where(a == b, 0.0, np.abs(a - b) / scale)
    return float(np.max(ulps, initial=0.0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--against", default="cca1a1c")
    parser.add_argument("--trials", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    old = _old(args.against)
    old_root = _old_exercises(args.against)
    folders = args.folders or sorted(p.parent for p in (ROOT / "exercises").rglob("exercise.yaml"))
    worst_ulps = 0.0
    print(
        f"{'exercise':42s} {'trials':>6s} {'same':>11s} {'ulps':>5s} {'abs':>8s} {'rel':>8s} "
        f"{'spread new/old':>17s} {'max new/old':>13s} {'same':>5s} {'0 vs >0':>7s}"
    )
    for folder in folders:
        exercise = load_exercise(folder)
        trials = make_trials(exercise, args.seed, args.trials or exercise.spec.trials)
        then = load_exercise(old_root / folder.resolve().relative_to(ROOT))
        assert then.id == exercise.id
        before = old.compute_references(then, trials)
        after = new.compute_references(exercise, trials)
        arrays = same = spread_same = apart = 0
        ulps = absolute = relative = 0.0
        low, high = np.inf, 0.0
        array_low, array_high = np.inf, 0.0
        for trial in trials:
            for name, value in before.expected[trial.index].items():
                got = after.expected[trial.index][name]
                arrays += 1
                same += int(np.array_equal(value, got))
                ulps = max(ulps, _ulps(value, got))
                difference = np.abs(value - got)
                absolute = max(absolute, float(np.max(difference, initial=0.0)))
                with np.errstate(divide="ignore", invalid="ignore"):
                    rel = np.where(difference == 0, 0.0, difference / np.abs(value))
                relative = max(relative, float(np.max(rel, initial=0.0)))
                s_old, s_new = before.spread[trial.index][name], after.spread[trial.index][name]
                spread_same += int(np.array_equal(s_old, s_new))
                both = (s_old > 0) & (s_new > 0)
                apart += int(np.sum((s_old > 0) != (s_new > 0)))
                if both.any():
                    ratio = s_new[both] / s_old[both]
                    low, high = min(low, float(ratio.min())), max(high, float(ratio.max()))
                    whole = float(s_new.max() / s_old.max())
                    array_low, array_high = min(array_low, whole), max(array_high, whole)
        worst_ulps = max(worst_ulps, ulps)
        shown = f"{low:.3g}..{high:.3g}" if high else "-"
        arrays_shown = f"{array_low:.3g}..{array_high:.3g}" if array_high else "-"
        print(
            f"{exercise.id:42s} {len(trials):6d} {same:5d}/{arrays:<5d} {ulps:5.0f} {absolute:8.1e} "
            f"{relative:8.1e} {shown:>17s} {arrays_shown:>13s} {spread_same:5d} {apart:7d}",
            flush=True,
        )
    return 1 if worst_ulps > 1 else 0


if __name__ == "__main__":
    sys.exit(main())
