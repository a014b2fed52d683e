"""Attack: lowers its parent's (the zygote's) CPU limit to 5 s at import.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os, resource
for which in (resource.RLIMIT_CPU,):
    try:
        resource.prlimit(os.getppid(), which, (5, 5))
    except OSError:
        pass
