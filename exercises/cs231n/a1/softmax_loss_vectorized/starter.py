import numpy as np


def softmax_loss(W, X, y, reg):
    """Softmax classifier loss with L2 regularisation, and its gradient d loss / dW (vectorised numpy).

    Args:
        W: float64 numpy array of shape (D, C): the weights.
        X: float64 numpy array of shape (N, D): one example per row.
        y: int64 numpy array of shape (N,): each example's class label, in [0, C-1].
        reg: float (0-d float64 array): the regularisation strength.

    Returns:
        loss: mean over rows i of -log softmax(X @ W)[i, y_i], plus reg * sum(W * W) (a number).
        dW: d loss / dW, shape (D, C).
    """
    # YOUR CODE HERE: scores = X @ W; subtract each row's max before exp. d loss / d scores is
    # (softmax - onehot(y)) / N; dW = X.T @ dscores plus the gradient of reg * sum(W * W).
    raise NotImplementedError("softmax_loss is not written yet")
    # END YOUR CODE
    return loss, dW
