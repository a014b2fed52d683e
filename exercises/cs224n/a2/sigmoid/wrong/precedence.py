import numpy as np


def sigmoid(x):
    s = 1 / 1 + np.exp(-x)  # parentheses missing: this is 1 + exp(-x)
    return s
