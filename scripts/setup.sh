#!/usr/bin/env bash
# Create .venv with grader and its dependencies. Usage: bash scripts/setup.sh [--dev]
# Every package at the version constraints.txt pins (the one environment this repository's tests and
# the Gradescope image use). torch: a plain `pip install torch` on Linux pulls a multi-GB CUDA build, so
# this installs the CPU build of the pinned version (torch==V+cpu) that pip's own configuration offers
# (point pip at a CPU wheel index in PIP_INDEX_URL or pip.conf); only where it finds none, the pinned
# version from pip's index, said loudly. The package itself declares a plain range (torch>=2.1) for GPU
# users. Then the packages the courses' course.yaml files ask for (grader.exercise.course).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
extras=""
[[ "${1:-}" == "--dev" ]] && extras="[dev]"

# bubblewrap walls each submission in (no network, own PID namespace, only its own files visible).
# Installed where this script may (root with apt); elsewhere the grader reports reduced isolation.
if ! command -v bwrap >/dev/null 2>&1 && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing bubblewrap" >&2
  { apt-get install -y -q bubblewrap || { apt-get update -q && apt-get install -y -q bubblewrap; }; } >/dev/null 2>&1 ||
    echo "setup: bubblewrap could not be installed; submissions will run with reduced isolation" >&2
fi

# --dev: the HTML report's tests open its pages in a real headless Chromium (Debian's chromium package).
if [[ -n "$extras" ]] && ! command -v chromium >/dev/null 2>&1 && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing chromium (for the HTML report's browser tests)" >&2
  { apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } >/dev/null 2>&1 ||
    echo "setup: chromium could not be installed; the HTML report's browser tests will fail here" >&2
fi

if [[ ! -x .venv/bin/python ]]; then
  "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check --quiet)
quiet_pip() {  # hide the harmless 'Location ... is ignored' lines some local pip configurations print
  "${pip[@]}" "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}

constraints=(-c constraints.txt)
pin=$(sed -n 's/^torch==\([^ ;#]*\).*/\1/p' constraints.txt)
if ! .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('torch').split('+')[0] != '$pin')" 2>/dev/null; then
  echo "setup: installing a CPU build of torch $pin" >&2
  if ! quiet_pip install "${constraints[@]}" "torch==$pin+cpu" 2>/dev/null; then
    echo "setup: pip's configuration offers no CPU build of torch $pin: installing torch==$pin from its index" \
      "(on Linux a CUDA build, gigabytes); for the CPU one, point pip at a CPU wheel index and run this again" >&2
    quiet_pip install "${constraints[@]}" "torch==$pin"
  fi
fi
echo "setup: installing grader${extras}" >&2
quiet_pip install "${constraints[@]}" -e ".${extras}"
# The courses' own packages, named in their course.yaml files (may be none).
if .venv/bin/python -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("grader.exercise.course") is None)'; then
  requirements=$(.venv/bin/python -m grader.exercise.requirements exercises)
  if [[ -n "$requirements" ]]; then
    echo "setup: installing the courses' packages: $(echo "$requirements" | tr '\n' ' ')" >&2
    quiet_pip install "${constraints[@]}" -r <(echo "$requirements")
  fi
else
  echo "setup: this grader reads no course.yaml requirements (no grader.exercise.course): none installed" >&2
fi
# The package's bytecode, written once here: an editable install writes none, and where
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines) every run, and every zygote it starts,
# would compile grader's 14,000 lines again (0.26 s of CPU for the grader process alone, measured).
.venv/bin/python -m compileall -q grader
