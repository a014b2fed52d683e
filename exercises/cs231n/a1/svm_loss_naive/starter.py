from builtins import range
import numpy as np
from random import shuffle
from past.builtins import xrange


def svm_loss_naive(W, X, y, reg):
    """Multiclass SVM (hinge) loss with L2 regularisation, and its gradient d loss / dW, with loops.

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
    dW = np.zeros(W.shape)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    loss = 0.0
    # The loss, as the course gives it: a loop over the examples and the classes.
    for i in range(num_train):
        scores = X[i].dot(W)
        correct_class_score = scores[y[i]]
        for j in range(num_classes):
            if j == y[i]:
                continue
            margin = scores[j] - correct_class_score + 1  # delta = 1
            if margin > 0:
                loss += margin
                # YOUR CODE HERE: what this margin adds to dW (to two of its columns)
    loss /= num_train
    loss += reg * np.sum(W * W)

    # YOUR CODE HERE: the average over the examples, and the regularisation's gradient.
    raise NotImplementedError("svm_loss_naive: the gradient dW is not written yet")
    # END YOUR CODE
    return loss, dW
