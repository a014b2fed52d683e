import numpy as np


def softplus_tails(x):
    e = np.exp(x.astype(np.float32))  # exp(-60) = 8.8e-27 is a normal float32
    return np.log1p(e).sum(), e / (np.float32(1) + e)
