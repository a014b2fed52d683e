import numpy as np


def softplus_tails(x):
    e = np.exp(x)
    return np.sum(np.log1p(e)), 1.0 / (1.0 + np.exp(-x))
