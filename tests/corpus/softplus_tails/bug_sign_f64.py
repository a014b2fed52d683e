import numpy as np


def softplus_tails(x):
    e = np.exp(x)
    return np.log1p(e).sum(), -e / (1 + e)
