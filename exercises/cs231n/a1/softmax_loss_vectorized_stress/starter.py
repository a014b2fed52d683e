from builtins import range
import numpy as np
from random import shuffle
from past.builtins import xrange


def softmax_loss_vectorized(W, X, y, reg):
    """Softmax classifier loss with L2 regularisation, and its gradient d loss / dW, without loops.

    Args:
        W: float64 numpy array of shape (D, C): the weights.
        X: float64 numpy array of shape (N, D): one example per row.
        y: int64 numpy array of shape (N,): each example's class label, in [0, C-1].
        reg: a Python float, the regularisation strength.

    Returns:
        loss: mean over rows i of -log softmax(X @ W)[i, y_i], plus reg * np.sum(W * W) (a number).
        dW: d loss / dW, shape (D, C), derived by hand.
    """
    loss = 0.0
    dW = np.zeros_like(W)

    # YOUR CODE HERE: scores = X @ W; subtract each row's max before exp. d loss / d scores is
    # (softmax - onehot(y)) / N; dW = X.T @ dscores plus the gradient of reg * np.sum(W * W).
    raise NotImplementedError("softmax_loss_vectorized is not written yet")
    # END YOUR CODE
    return loss, dW
