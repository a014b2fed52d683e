"""Attack: puts its parent under SCHED_IDLE pins it to one core and gives it idle I/O priority.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os
try:
    os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))
except OSError:
    pass
try:
    os.sched_setaffinity(os.getppid(), {0})
except OSError:
    pass
try:  # ioprio_set(IOPRIO_WHO_PROCESS, parent, the idle class)
    import ctypes
    ctypes.CDLL(None).syscall(251, 1, os.getppid(), 3 << 13)
except OSError:
    pass
