import numpy as np


def relu_backward(dout, cache):
    x = cache
    dx = dout * (x > 0)  # d max(0, x) / dx is 1 where x > 0, 0 elsewhere; the mask comes from x
    return dx
