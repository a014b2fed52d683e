import numpy as np


def relu_backward(dout, cache):
    x = cache
    dx = dout * np.where(x > 0, 1.0, 0.01)  # leaky ReLU's slope 0.01 for x <= 0; plain ReLU's is 0
    return dx
