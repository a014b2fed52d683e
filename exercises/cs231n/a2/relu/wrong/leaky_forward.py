import numpy as np


def relu_forward(x):
    return np.maximum(0.01 * x, x), x  # a leaky ReLU


def relu_backward(dout, cache):
    x = cache
    return dout * np.where(x > 0, 1.0, 0.01)
