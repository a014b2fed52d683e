import numpy as np


def batchnorm_forward(x, gamma, beta, bn_param):
    """Batch normalisation, training mode: each column of x normalised by its mean and biased variance.

    Input:
    - x: Data of shape (N, D)
    - gamma: Scale parameter of shape (D,)
    - beta: Shift parameter of shape (D,)
    - bn_param: Dictionary with the following keys:
      - mode: 'train' (the only mode graded here)
      - eps: Constant for numeric stability

    Returns a tuple of:
    - out: gamma * (x - mean) / sqrt(var + eps) + beta, of shape (N, D)
    - cache: whatever batchnorm_backward_alt needs; the grader never looks in it
    """
    # YOUR CODE HERE
    raise NotImplementedError("batchnorm_forward is not written yet")
    # END YOUR CODE
    return out, cache


def batchnorm_backward_alt(dout, cache):
    """Alternative backward pass for batch normalization, by hand (no autograd).

    Work out the derivatives for the batch normalization backward pass on paper and simplify as much
    as possible: you should be able to derive a simple expression for dx (one line, or close).

    Inputs / outputs: Same as batchnorm_backward
    - dout: Upstream derivatives, of shape (N, D)
    - cache: what batchnorm_forward returned as its cache

    Returns a tuple of:
    - dx: Gradient with respect to inputs x, of shape (N, D)
    - dgamma: Gradient with respect to scale parameter gamma, of shape (D,)
    - dbeta: Gradient with respect to shift parameter beta, of shape (D,)
    """
    # YOUR CODE HERE
    raise NotImplementedError("batchnorm_backward_alt is not written yet")
    # END YOUR CODE
    return dx, dgamma, dbeta
