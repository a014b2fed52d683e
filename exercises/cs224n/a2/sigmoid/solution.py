#!/usr/bin/env python

import numpy as np
import random  # noqa: F401  (word2vec.py's header, kept as handed out)

from utils.gradcheck import gradcheck_naive, grad_tests_softmax  # noqa: F401
from utils.utils import normalizeRows, softmax  # noqa: F401


def sigmoid(x):
    """The sigmoid of a scalar or numpy array, elementwise: 1 / (1 + exp(-x)), written without
    overflow for large negative x: exp(-|x|) is at most 1."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))
