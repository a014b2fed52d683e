import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    """Convolutional layer, forward, with loops over the output positions.

    Args:
        x: (N, C, H, W) float64 array: N images of C channels.
        w: (F, C, HH, WW) float64 array: F filters, each across all C channels.
        b: (F,) float64 array: one bias per filter.
        conv_param: {'stride': S, 'pad': P}, Python ints. Pad x with P zeros on each side of the height
            and width axes (without changing x itself).

    Returns:
        out: (N, F, H', W'), H' = 1 + (H + 2P - HH) / S, W' = 1 + (W + 2P - WW) / S, where
            out[n, f, i, j] = sum(xpad[n, :, i*S:i*S+HH, j*S:j*S+WW] * w[f]) + b[f].
        cache: whatever conv_backward_naive needs; the grader never looks in it.
    """
    # YOUR CODE HERE
    raise NotImplementedError("conv_forward_naive is not written yet")
    # END YOUR CODE
    return out, cache


def conv_backward_naive(dout, cache):
    """Convolutional layer, backward: the gradients from dout = d loss / d out, shape (N, F, H', W').

    Returns:
        dx: (N, C, H, W), dw: (F, C, HH, WW), db: (F,), derived by hand (no autograd).
    """
    # YOUR CODE HERE
    raise NotImplementedError("conv_backward_naive is not written yet")
    # END YOUR CODE
    return dx, dw, db
