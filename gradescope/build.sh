#!/usr/bin/env bash
# Build the zip to upload as a Gradescope "Autograder": bash gradescope/build.sh EXERCISES_DIR... OUT.zip
# It holds setup.sh and run_autograder at the top, the grader's source in grader/, and the exercises
# to grade in exercises/ (exercise folders, or folders of them, each under its own name with the shared
# folders it uses beside it): their specs, references and support files only. POOL_SIZE (default 8)
# is how many secret seeds setup.sh prepares with the image (seed_pool.py says what the number trades);
# POOL_SIZE=0: none, each submission draws a fresh seed and computes its references.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bash gradescope/build.sh EXERCISES_DIR... OUT.zip" >&2
    exit 2
fi
exercises=("${@:1:$#-1}")
last=${!#}
out=$(cd "$(dirname "$last")" && pwd)/$(basename "$last")
repo=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$repo/gradescope/setup.sh" "$repo/gradescope/run_autograder" "$repo/gradescope/prepare_pool.sh" "$stage/"
pool_size=${POOL_SIZE:-8}
[[ "$pool_size" =~ ^[0-9]+$ ]] || { echo "POOL_SIZE must be a number, got '$pool_size'" >&2; exit 2; }
echo "$pool_size" >"$stage/pool-size"
mkdir -p "$stage/grader"
cp -r "$repo/grader" "$repo/pyproject.toml" "$repo/README.md" "$stage/grader/"
# Only what grading reads: each exercise's spec, its reference (reference.py, where the spec names one)
# and its support files. Not the solution, the starter or the known-wrong files: a submission must find
# nothing to copy, whatever isolation holds.
python=${PYTHON:-$repo/.venv/bin/python}
[ -x "$python" ] || python=python3
"$python" "$repo/gradescope/stage_exercises.py" "${exercises[@]}" "$stage/exercises"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$out"
(cd "$stage" && python3 -m zipfile -c "$out" setup.sh run_autograder prepare_pool.sh pool-size grader exercises)
echo "wrote $out: upload it as the assignment's autograder (Ubuntu image)"
