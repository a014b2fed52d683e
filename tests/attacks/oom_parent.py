"""Attack: raises its parent's OOM score adjustment to 1000.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
try:
    with open(f"/proc/{os.getppid()}/oom_score_adj", "w") as f:
        f.write("1000")
except OSError:
    pass
