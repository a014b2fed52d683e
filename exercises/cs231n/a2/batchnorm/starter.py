import numpy as np


def batchnorm_forward(x, gamma, beta, bn_param):
    """Batch normalisation, training mode: each column of x normalised by its mean and biased variance.

    Args:
        x: (N, D) float64 array; gamma, beta: (D,) float64 arrays.
        bn_param: {'mode': 'train', 'eps': eps}, eps a float.

    Returns:
        out: gamma * (x - mean) / sqrt(var + eps) + beta, shape (N, D).
        cache: whatever batchnorm_backward needs; the grader never looks in it.
    """
    # YOUR CODE HERE
    raise NotImplementedError("batchnorm_forward is not written yet")
    # END YOUR CODE
    return out, cache


def batchnorm_backward(dout, cache):
    """The gradients of the loss with respect to x, gamma and beta, from dout = d loss / d out.

    Returns:
        dx: (N, D), dgamma: (D,), dbeta: (D,), derived by hand (no autograd).
    """
    # YOUR CODE HERE
    raise NotImplementedError("batchnorm_backward is not written yet")
    # END YOUR CODE
    return dx, dgamma, dbeta
