import numpy as np

from utils.utils import softmax


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    loss = -np.log(y_hat[outsideWordIdx])
    delta = y_hat.copy()
    delta[outsideWordIdx] -= 1
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(centerWordVec, delta)  # (d, V): the operands swapped
    return loss, gradCenterVec, gradOutsideVecs
