#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu). It installs
# Python, bubblewrap (the grader's sandbox) and this repository with torch from pip's configured index.
# The image has no GPU: a course that wants a CPU build of torch (the default Linux wheel brings
# gigabytes of CUDA libraries) sets TORCH_INDEX to a CPU wheel index of its choosing.
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install torch ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
/autograder/venv/bin/pip install /autograder/source/grader
bash /autograder/source/prepare_pool.sh  # the references of a pool of secret seeds: see there
