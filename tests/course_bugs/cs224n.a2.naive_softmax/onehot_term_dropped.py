import numpy as np
import random

from utils.gradcheck import gradcheck_naive, grad_tests_softmax
from utils.utils import normalizeRows, softmax


def sigmoid(x):
    """Compute the sigmoid function for the input here."""
    return 1 / (1 + np.exp(-x))


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    """Naive softmax loss and gradients for one (center word, outside word) pair.

    centerWordVec (d,), outsideWordIdx an int, outsideVectors (V, d); dataset is not used here.
    Returns loss, gradCenterVec (d,), gradOutsideVecs (V, d).
    """
    scores = outsideVectors @ centerWordVec
    y_hat = softmax(scores)
    loss = -np.log(y_hat[outsideWordIdx])

    delta = y_hat.copy()
    delta[outsideWordIdx] -= 1
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(y_hat, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
