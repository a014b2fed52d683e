import numpy as np


def max_pool_forward_naive(x, pool_param):
    """Max-pooling layer, forward, with loops over the output positions (no padding).

    Args:
        x: (N, C, H, W) float64 array.
        pool_param: {'pool_height': PH, 'pool_width': PW, 'stride': S}, Python ints.

    Returns:
        out: (N, C, H', W'), H' = 1 + (H - PH) / S, W' = 1 + (W - PW) / S, where
            out[n, c, i, j] = max(x[n, c, i*S:i*S+PH, j*S:j*S+PW]).
        cache: whatever max_pool_backward_naive needs; the grader never looks in it.
    """
    # YOUR CODE HERE
    raise NotImplementedError("max_pool_forward_naive is not written yet")
    # END YOUR CODE
    return out, cache


def max_pool_backward_naive(dout, cache):
    """Max-pooling layer, backward: dx (N, C, H, W) from dout = d loss / d out, shape (N, C, H', W'),
    derived by hand (no autograd). Windows may overlap when the stride is smaller than the window."""
    # YOUR CODE HERE
    raise NotImplementedError("max_pool_backward_naive is not written yet")
    # END YOUR CODE
    return dx
