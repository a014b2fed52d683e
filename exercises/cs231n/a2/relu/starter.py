import numpy as np


def relu_forward(x):
    """Computes the forward pass for a layer of rectified linear units (ReLUs).

    Input:
    - x: Inputs, of any shape

    Returns a tuple of:
    - out: Output, of the same shape as x
    - cache: x, or whatever relu_backward needs; the grader never looks in it
    """
    out = None
    # YOUR CODE HERE
    raise NotImplementedError("relu_forward is not written yet")
    # END YOUR CODE
    cache = x
    return out, cache


def relu_backward(dout, cache):
    """Computes the backward pass for a layer of rectified linear units (ReLUs), by hand (no autograd).

    Input:
    - dout: Upstream derivatives, of any shape
    - cache: what relu_forward returned as its cache

    Returns:
    - dx: Gradient with respect to x, of the shape of x (one array, not a tuple)
    """
    dx, x = None, cache
    # YOUR CODE HERE
    raise NotImplementedError("relu_backward is not written yet")
    # END YOUR CODE
    return dx
