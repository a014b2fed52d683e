import numpy as np


def softmax_loss(x, y):
    """Computes the loss and gradient for softmax classification.

    Inputs:
    - x: Input data, of shape (N, C) where x[i, j] is the score for the jth class for the ith input.
    - y: Vector of labels, of shape (N,) where y[i] is the label for x[i] and 0 <= y[i] < C

    Returns a tuple of:
    - loss: Scalar giving the loss
    - dx: Gradient of the loss with respect to x, derived by hand (no autograd)
    """
    loss, dx = None, None
    # YOUR CODE HERE
    raise NotImplementedError("softmax_loss is not written yet")
    # END YOUR CODE
    return loss, dx
