import numpy as np


def relu_forward(x):
    out = np.maximum(0, x)
    return out, x


def relu_backward(dout, cache):
    x = cache
    return dout * (x > 0)
