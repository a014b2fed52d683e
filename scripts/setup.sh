#!/usr/bin/env bash
# Create .venv with grader and its dependencies. Usage: bash scripts/setup.sh [--dev]
# torch: a plain `pip install torch` on Linux pulls a multi-GB CUDA build, so this prefers a CPU build:
# one already installed, then a CPU wheel that pip's own configuration offers, and only then whatever
# pip's configured index picks. To get a CPU build there, point pip at a CPU wheel index in its own
# configuration (PIP_INDEX_URL or pip.conf) before running this. The package itself declares a plain
# range (torch>=2.1) for GPU users.
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

if ! .venv/bin/python -c 'import torch, sys; sys.exit(int(tuple(map(int, torch.__version__.split(".")[:2])) < (2, 1)))' 2>/dev/null; then
  echo "setup: installing a CPU build of torch" >&2
  quiet_pip install "torch==2.13.0+cpu" 2>/dev/null || quiet_pip install "torch>=2.1"
fi
echo "setup: installing grader${extras}" >&2
quiet_pip install -e ".${extras}"
# The package's bytecode, written once here: an editable install writes none, and where
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines) every run, and every zygote it starts,
# would compile grader's 14,000 lines again (0.26 s of CPU for the grader process alone, measured).
.venv/bin/python -m compileall -q grader
