import numpy as np


def softplus_tails(x):
    e = np.exp(x)
    sigmoid = 1.0 - 1.0 / (1.0 + e)  # 1 - sigmoid(-x): 1 - 1 = 0 in float64 below x = -36.7
    return np.log1p(e).sum(), sigmoid
