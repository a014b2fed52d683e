import numpy as np


def relu_backward(dout, cache):
    x = cache
    dx = dout * (x > 0)
    return (dx,)  # a one-element tuple: relu_backward returns the array itself
