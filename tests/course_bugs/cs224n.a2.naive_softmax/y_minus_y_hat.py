import numpy as np
import random

from utils.gradcheck import gradcheck_naive, grad_tests_softmax
from utils.utils import normalizeRows, softmax


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(np.dot(outsideVectors, centerWordVec))
    loss = -np.log(y_hat[outsideWordIdx])
    y = np.zeros_like(y_hat)
    y[outsideWordIdx] = 1
    gradCenterVec = np.dot(outsideVectors.T, y - y_hat)
    gradOutsideVecs = np.outer(y - y_hat, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs
