#!/usr/bin/env bash
# setup.sh's last step, at the image's build: a pool of secret seeds and their references (grader prepare
# --pool; cs231n/a2: about 15 s of CPU a seed), so that each submission draws one of them and computes
# no reference (run_autograder). The pool is root's alone (0700), outside the virtual environment and the
# grader's package, which the sandbox mounts: no hand-in sees it. Its size is build.sh's POOL_SIZE
# (seed_pool.py says what the number trades); 0: no pool, a fresh secret seed per submission, paid there.
# AUTOGRADER_ROOT and AUTOGRADER_GRADER stand in for /autograder and its grader in a test of the image.
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
grader=${AUTOGRADER_GRADER:-$root/venv/bin/grader}
size=$(cat "$root/source/pool-size" 2>/dev/null || echo 8)
if [ "$size" -gt 0 ]; then
    "$grader" prepare "$root/source/exercises" --pool "$root/reference-pool" --pool-size "$size"
fi
