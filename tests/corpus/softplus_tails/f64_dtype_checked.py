import numpy as np


def softplus_tails(x):
    assert x.dtype == np.float64, "softplus_tails takes a float64 array"
    e = np.exp(x)
    return np.log1p(e).sum(), e / (1.0 + e)
