import numpy as np


def svm_loss(W, X, y, reg):
    """Multiclass SVM (hinge) loss with L2 regularisation, and its gradient d loss / dW (vectorised numpy).

    Args:
        W: float64 numpy array of shape (D, C): the weights.
        X: float64 numpy array of shape (N, D): one example per row.
        y: int64 numpy array of shape (N,): each example's class label, in [0, C-1].
        reg: float (0-d float64 array): the regularisation strength.

    Returns:
        loss: sum over i and j != y_i of max(0, s_ij - s_iy_i + 1), divided by N, plus reg * sum(W * W),
            where s = X @ W (a number).
        dW: d loss / dW, shape (D, C).
    """
    # YOUR CODE HERE: scores = X @ W; margins for every class, then zero the correct class's own.
    # Each positive margin adds +1 to its class's score gradient and -1 to the correct class's;
    # divide by N, dW = X.T @ dscores, plus the gradient of reg * sum(W * W).
    raise NotImplementedError("svm_loss is not written yet")
    # END YOUR CODE
    return loss, dW
