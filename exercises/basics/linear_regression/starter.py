import numpy as np


def linear_regression(X, y, w, b):
    """Mean squared error of the linear prediction X @ w + b, and its gradients (vectorised numpy).

    Args:
        X: float64 numpy array of shape (N, D): one example per row.
        y: float64 numpy array of shape (N,): the targets.
        w: float64 numpy array of shape (D,): the weights.
        b: float (0-d float64 array): the bias.

    Returns:
        loss: mean over i of (X[i] @ w + b - y[i])**2 (a number).
        dw: d loss / dw, shape (D,).
        db: d loss / db (a number).
    """
    # YOUR CODE HERE: residual r = X @ w + b - y, shape (N,). d loss / d pred = 2 * r / N;
    # chain it through pred = X @ w + b to w and to b.
    raise NotImplementedError("linear_regression is not written yet")
    # END YOUR CODE
    return loss, dw, db
