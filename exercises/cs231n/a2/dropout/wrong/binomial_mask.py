import numpy as np


def dropout_forward(x, dropout_param):
    p = dropout_param["p"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    mask = np.random.binomial(1, p, size=x.shape) / p  # keeps with probability p, from another stream
    return x * mask, (dropout_param, mask)


def dropout_backward(dout, cache):
    dropout_param, mask = cache
    return dout * mask
