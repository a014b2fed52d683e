"""The names word2vec.py imports from the course's gradcheck module (gradcheck_naive, and from 2021 on
grad_tests_softmax and grad_tests_negsamp). Under the grader they check nothing and print nothing:
the grader checks the gradients itself; a file calling them at import still imports."""


def gradcheck_naive(f, x, gradientText=""):
    return None


def grad_tests_softmax(*args, **kwargs):
    return None


def grad_tests_negsamp(*args, **kwargs):
    return None
