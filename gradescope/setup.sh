#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu). It installs
# Python, bubblewrap (the grader's sandbox) and this repository, with a CPU build of torch: the
# image has no GPU, and the default torch wheel would pull gigabytes of CUDA libraries.
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install /autograder/source/grader
