"""Attack: renices its parent to 19, and every process of its uid.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
for which, who in ((os.PRIO_PROCESS, os.getppid()), (os.PRIO_USER, os.getuid())):
    try:
        os.setpriority(which, who, 19)
    except OSError:
        pass
