"""os.execv of the interpreter at import: the worker replaced by a process without its walls."""
import os
import sys

os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(30)"])


def graph2(W_np, x_np, b_np):
    raise AssertionError("never reached: the import execs")
