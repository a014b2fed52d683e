"""A minimal stand-in for the course's cs231n package, so that a layers.py handed in with
`from cs231n.im2col import *` imports; written for the grader, not the course's code."""
