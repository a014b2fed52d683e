#!/usr/bin/env bash
# Build the zip to upload as a Gradescope "Autograder": bash gradescope/build.sh EXERCISES_DIR... OUT.zip
# It holds setup.sh and run_autograder at the top; in wheels/ the grader as a built wheel and, by
# default, the CPU build of torch; constraints.txt, the one pinned environment (the repository's); and
# the exercises to grade in exercises/ (exercise folders, or folders of them, each under its own name
# with the shared folders and course.yaml files it uses): their specs, references and support files only.
#
# torch is the version constraints.txt pins, and a CPU build unless asked otherwise: Gradescope's
# machines have no GPU, and a plain `pip install torch` there brings a CUDA build (5.5 GB). Which wheel:
#   (default)            the CPU wheel your own pip resolves (`pip download torch==V+cpu`, with your pip
#                        configuration), bundled in the zip: the image installs it from there, offline
#                        of any index, for the Python version of the interpreter that built it (PYTHON);
#   TORCH_INDEX=URL      nothing bundled: the image installs torch==V+cpu from that index (a CPU wheel
#                        index of your choosing), recorded in the zip;
#   TORCH_BUILD=cuda     deliberately the default build of pip's index on the image (CUDA on Linux).
# POOL_SIZE (default 8) is how many secret seeds setup.sh prepares with the image (seed_pool.py says what
# the number trades); POOL_SIZE=0: none, each submission draws a fresh seed and computes its references.
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
python=${PYTHON:-$repo/.venv/bin/python}
[ -x "$python" ] || python=python3
pip=("$python" -m pip --disable-pip-version-check --quiet)

torch_build=${TORCH_BUILD:-cpu}
case "$torch_build" in
    cpu | cuda) ;;
    *) echo "TORCH_BUILD must be cpu or cuda, got '$torch_build'" >&2; exit 2 ;;
esac
pool_size=${POOL_SIZE:-8}
[[ "$pool_size" =~ ^[0-9]+$ ]] || { echo "POOL_SIZE must be a number, got '$pool_size'" >&2; exit 2; }
torch_pin=$(sed -n 's/^torch==\([^ ;#]*\).*/\1/p' "$repo/constraints.txt")
[ -n "$torch_pin" ] || { echo "$repo/constraints.txt pins no torch version (torch==V)" >&2; exit 2; }

cp "$repo/gradescope/setup.sh" "$repo/gradescope/run_autograder" "$repo/gradescope/prepare_pool.sh" \
    "$repo/constraints.txt" "$stage/"
echo "$pool_size" >"$stage/pool-size"
echo "$torch_build" >"$stage/torch-build"
"$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")' >"$stage/python-version"
mkdir -p "$stage/wheels"

# The grader as a wheel, built from a copy of its sources (the repository is left as it was).
src=$stage/src
mkdir -p "$src"
cp -r "$repo/grader" "$repo/pyproject.toml" "$repo/README.md" "$src/"
find "$src" -name __pycache__ -prune -exec rm -rf {} +
isolation=()
"$python" -c 'import setuptools' 2>/dev/null && isolation=(--no-build-isolation)
"${pip[@]}" wheel --no-deps ${isolation[@]+"${isolation[@]}"} -w "$stage/wheels" "$src"
rm -rf "$src"

if [ "$torch_build" = cpu ] && [ -n "${TORCH_INDEX:-}" ]; then
    echo "$TORCH_INDEX" >"$stage/torch-index"
elif [ "$torch_build" = cpu ]; then
    if ! "${pip[@]}" download --no-deps --only-binary=:all: -d "$stage/wheels" "torch==$torch_pin+cpu"; then
        echo "your pip finds no CPU wheel of torch $torch_pin (torch==$torch_pin+cpu) for Python" \
            "$(cat "$stage/python-version"): point pip at a CPU wheel index (pip.conf, PIP_FIND_LINKS)," \
            "or pass one: TORCH_INDEX=URL bash gradescope/build.sh ...; TORCH_BUILD=cuda ships CUDA's" >&2
        exit 1
    fi
fi

# Only what grading reads: each exercise's spec, its reference (reference.py, where the spec names one)
# and its support files. Not the solution, the starter or the known-wrong files: a submission must find
# nothing to copy, whatever isolation holds.
"$python" "$repo/gradescope/stage_exercises.py" "${exercises[@]}" "$stage/exercises"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$out"
# Wheels are zip files already: stored as they are, not compressed twice (the CPU torch is 190 MB).
(cd "$stage" && "$python" - "$out" setup.sh run_autograder prepare_pool.sh constraints.txt pool-size \
    torch-build python-version $(ls torch-index 2>/dev/null) wheels exercises <<'PY'
import os, sys, zipfile

with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
    for top in sys.argv[2:]:
        paths = [top] if os.path.isfile(top) else sorted(os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs)
        for path in paths:
            archive.write(path, compress_type=zipfile.ZIP_STORED if path.endswith(".whl") else None)
PY
)
echo "wrote $out ($(du -h "$out" | cut -f1), torch $torch_pin: $torch_build$([ -f "$stage/torch-index" ] &&
    echo " from $(cat "$stage/torch-index")")): upload it as the assignment's autograder (Ubuntu image)"
