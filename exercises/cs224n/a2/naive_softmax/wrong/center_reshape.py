#!/usr/bin/env python

import numpy as np
import random  # noqa: F401  (word2vec.py's header, kept as handed out)

from utils.gradcheck import gradcheck_naive, grad_tests_softmax  # noqa: F401
from utils.utils import normalizeRows, softmax  # noqa: F401


def sigmoid(x):
    """Compute the sigmoid function for the input here."""
    return 1 / (1 + np.exp(-x))


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    """Naive softmax loss and gradients for one (center word, outside word) pair.

    centerWordVec (d,), outsideWordIdx an int, outsideVectors (V, d); dataset is not used here.
    Returns loss, gradCenterVec (d,), gradOutsideVecs (V, d).
    """
    scores = outsideVectors @ centerWordVec  # (V,)
    y_hat = softmax(scores)
    loss = -np.log(y_hat[outsideWordIdx])

    delta = y_hat.copy()  # y_hat - y, y the one-hot vector of the outside word
    delta[outsideWordIdx] -= 1
    V, d = outsideVectors.shape
    gradCenterVec = outsideVectors.reshape(d, V) @ delta  # (d, V) @ (V,): looks like U.T
    gradOutsideVecs = np.outer(delta, centerWordVec)  # (V, d)
    return loss, gradCenterVec, gradOutsideVecs
