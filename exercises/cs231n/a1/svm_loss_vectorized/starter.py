from builtins import range
import numpy as np
from random import shuffle
from past.builtins import xrange


def svm_loss_vectorized(W, X, y, reg):
    """Multiclass SVM (hinge) loss with L2 regularisation, and its gradient d loss / dW, without loops.

    Args:
        W: float64 numpy array of shape (D, C): the weights.
        X: float64 numpy array of shape (N, D): one example per row.
        y: int64 numpy array of shape (N,): each example's class label, in [0, C-1].
        reg: a Python float, the regularisation strength.

    Returns:
        loss: sum over i and j != y_i of max(0, s_ij - s_iy_i + 1), divided by N, plus reg * np.sum(W * W),
            where s = X @ W (a number).
        dW: d loss / dW, shape (D, C), derived by hand.
    """
    loss = 0.0
    dW = np.zeros(W.shape)

    # YOUR CODE HERE: scores = X @ W; margins for every class, then zero the correct class's own.
    # Each positive margin adds +1 to its class's score gradient and -1 to the correct class's;
    # divide by N, dW = X.T @ dscores, plus the gradient of reg * np.sum(W * W).
    raise NotImplementedError("svm_loss_vectorized is not written yet")
    # END YOUR CODE
    return loss, dW
