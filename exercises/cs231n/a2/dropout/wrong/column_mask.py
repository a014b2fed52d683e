import numpy as np


def dropout_forward(x, dropout_param):
    p = dropout_param["p"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    mask = np.ones((1, x.shape[1]))  # one entry per feature: whole columns dropped
    prop = np.random.rand(1, x.shape[1])
    mask[prop < p] = 0
    return x * mask / p, (dropout_param, mask)


def dropout_backward(dout, cache):
    dropout_param, mask = cache
    return dout * mask / dropout_param["p"]
