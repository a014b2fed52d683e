import numpy as np


def softplus_tails(x):
    e = np.exp(x)
    return np.log1p(e).sum(), np.exp(-x) / (1 + np.exp(-x))  # sigmoid(-x): 1 - sigmoid(x)
