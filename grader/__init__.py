"""grader: auto-graded gradient exercises in PyTorch and numpy.

Kept import-free on purpose: the sandboxed worker imports this package beside student code,
and must not pay for (or expose) the grader's own dependencies.
"""

__version__ = "0.2.0"
