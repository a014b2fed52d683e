import numpy as np


def softplus_tails(x):
    e = np.exp(x)
    loss = np.log1p(e).sum()
    grad = -e / (1.0 + e)  # the sign of d log(1 + exp(x)) / dx lost
    return loss, grad
