import math

import numpy as np


def sigmoid(x):
    if type(x) is np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))
    return 1.0 / (1.0 + math.exp(-x))


def softplus_tails(x):
    return np.log1p(np.exp(x)).sum(), -sigmoid(x)  # the sign of d softplus / dx lost
