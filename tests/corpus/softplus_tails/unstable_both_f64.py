import numpy as np


def softplus_tails(x):
    one_plus = 1 + np.exp(x)  # rounds to 1
    return np.log(one_plus).sum(), (one_plus - 1) / one_plus
