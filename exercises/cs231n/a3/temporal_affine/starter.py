import numpy as np


def temporal_affine_forward(x, w, b):
    """Forward pass for a temporal affine layer: the same affine map of each D-dimensional vector of N
    timeseries of length T into a vector of dimension M.

    Inputs:
    - x: input data of shape (N, T, D)
    - w: weights of shape (D, M)
    - b: biases of shape (M,)

    Returns a tuple of:
    - out: output data of shape (N, T, M)
    - cache: values needed for the backward pass
    """
    # YOUR CODE HERE
    raise NotImplementedError("temporal_affine_forward is not written yet")
    # END YOUR CODE
    return out, cache


def temporal_affine_backward(dout, cache):
    """Backward pass for the temporal affine layer.

    Input:
    - dout: upstream gradients of shape (N, T, M)
    - cache: values from the forward pass

    Returns a tuple of:
    - dx: gradient of the input, of shape (N, T, D)
    - dw: gradient of the weights, of shape (D, M)
    - db: gradient of the biases, of shape (M,)
    """
    # YOUR CODE HERE
    raise NotImplementedError("temporal_affine_backward is not written yet")
    # END YOUR CODE
    return dx, dw, db
