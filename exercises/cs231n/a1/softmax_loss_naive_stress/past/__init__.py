"""A stand-in for the `future` package's `past`, so that CS231n's files import unchanged.

CS231n's classifiers (2017 on) start with `from past.builtins import xrange`, a Python 2 name that the
`future` package provides; the grader's environment does not install `future`. This folder is the
exercise's support (`support: [past]` in exercise.yaml): it comes first on the hand-in's import path,
so those lines import, and `xrange` is `range`, as it is in `future` on Python 3.
"""
