"""Attack: fills /dev/shm with 1.5 GB and leaves it there.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
try:
    with open("/dev/shm/grader-attack-fill", "wb") as f:
        chunk = b"x" * (1 << 20)
        for _ in range(1536):
            f.write(chunk)
except OSError:
    pass
