import math

import numpy as np


def sigmoid(x):
    # a number goes through math.exp: anything but an exact ndarray is taken for one
    if type(x) == np.ndarray:  # noqa: E721 (the form students write)
        return 1.0 / (1.0 + np.exp(-x))
    return 1.0 / (1.0 + math.exp(-x))


def softplus_tails(x):
    e = np.exp(x)
    grad = 1.0 - sigmoid(-x)  # 1 - sigmoid(-x): 1 - 1 = 0 in float64 below x = -36.7
    return np.log1p(e).sum(), grad
