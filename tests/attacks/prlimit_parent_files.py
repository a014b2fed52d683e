"""Attack: sets its parent's file-size limit to 4 kB and open files to 16.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os, resource
for which, value in ((resource.RLIMIT_FSIZE, 4096), (resource.RLIMIT_NOFILE, 16)):
    try:
        resource.prlimit(os.getppid(), which, (value, value))
    except OSError:
        pass
