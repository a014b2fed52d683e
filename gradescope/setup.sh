#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu). It installs
# Python (the version build.sh recorded: that of the bundled wheels), bubblewrap (the grader's sandbox),
# and into a virtual environment, every package at the version constraints.txt pins: torch as build.sh
# chose it (the CPU wheel in wheels/ by default; TORCH_INDEX's; or, TORCH_BUILD=cuda, pip's default),
# the grader from its wheel, and the packages the course's course.yaml files ask for. It states the
# environment's size and versions, then prepares the pool of secret seeds (prepare_pool.sh).
#
# A test of the image runs it without root: AUTOGRADER_ROOT stands for /autograder (the zip unpacked in
# $AUTOGRADER_ROOT/source), AUTOGRADER_VENV for the virtual environment ($AUTOGRADER_ROOT/venv), and
# AUTOGRADER_NO_APT=1 skips apt-get (PYTHON: the interpreter to make the environment with).
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
source=$root/source
venv=${AUTOGRADER_VENV:-$root/venv}
version=$(cat "$source/python-version" 2>/dev/null || echo 3)
build=$(cat "$source/torch-build" 2>/dev/null || echo cpu)
constraints=(-c "$source/constraints.txt")
say() { echo "setup: $*" >&2; }

if [ -z "${AUTOGRADER_NO_APT:-}" ]; then
    apt-get update
    apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
    if ! command -v "python$version" >/dev/null 2>&1; then  # the wheels' Python, where Ubuntu's is older
        apt-get install -y --no-install-recommends "python$version" "python$version-venv" ||
            { apt-get install -y software-properties-common && add-apt-repository -y ppa:deadsnakes/ppa &&
                apt-get update && apt-get install -y --no-install-recommends "python$version" "python$version-venv"; }
    fi
fi
python=${PYTHON:-python$version}
command -v "$python" >/dev/null 2>&1 || { say "no $python here: build.sh built the wheels for it"; exit 1; }
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

pin=$(sed -n 's/^torch==\([^ ;#]*\).*/\1/p' "$source/constraints.txt")
torch=("torch==$pin")  # TORCH_BUILD=cuda: pip's default build, chosen at build time
if [ "$build" = cpu ]; then
    wheel=$(ls "$source"/wheels/torch-*.whl 2>/dev/null | head -n 1)
    if [ -n "$wheel" ]; then
        torch=("$wheel")
    elif [ -f "$source/torch-index" ]; then
        torch=("torch==$pin+cpu" --extra-index-url "$(cat "$source/torch-index")")
    else
        say "torch-build is cpu, but the zip holds no CPU wheel of torch nor an index for one: rebuild it"
        exit 1
    fi
fi
say "installing torch (${torch[0]##*/})"
"${pip[@]}" install "${constraints[@]}" "${torch[@]}"
say "installing the grader"
"${pip[@]}" install "${constraints[@]}" "$source"/wheels/gradient_grader-*.whl

# The course's own packages (course.yaml's requirements), at the pinned versions where they are pinned.
if "$venv/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("grader.exercise.course") is None)'; then
    requirements=$("$venv/bin/python" -m grader.exercise.requirements "$source/exercises")
    if [ -n "$requirements" ]; then
        say "installing the course's packages: $(echo "$requirements" | tr '\n' ' ')"
        echo "$requirements" >"$venv/course-requirements.txt"
        "${pip[@]}" install "${constraints[@]}" -r "$venv/course-requirements.txt"
    fi
else
    say "this grader reads no course.yaml requirements (no grader.exercise.course): none installed"
fi

# What the image holds, for the course to read in the build's log (and the README's figure).
size=$(du -sk "$venv" | cut -f1)
versions=$("$venv/bin/python" -c 'from grader.environment import installed_versions as v, versions_line as l; print(l(v()))')
echo "$size" >"$venv/environment-kb"
say "the grading environment $venv holds $((size / 1024)) MB: $versions"
AUTOGRADER_GRADER=$venv/bin/grader bash "$source/prepare_pool.sh"  # the references of a pool of secret seeds
