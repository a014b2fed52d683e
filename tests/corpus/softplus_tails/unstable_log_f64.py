import numpy as np


def softplus_tails(x):
    return np.sum(np.log(1 + np.exp(x))), np.exp(x) / (1 + np.exp(x))
