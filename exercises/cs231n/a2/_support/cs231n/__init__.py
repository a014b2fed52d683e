"""The parts of CS231n's `cs231n` package that students' layers.py files import, for grading them as
handed in. Written for the grader; the course's own package holds much more (data loaders, solvers)."""
