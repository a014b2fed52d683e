import numpy as np

from utils.utils import softmax


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    loss = -np.log(y_hat[outsideWordIdx])
    delta = y_hat.copy()
    delta[outsideWordIdx] -= 1
    gradCenterVec = outsideVectors.T @ delta
    # only u_o appears in the loss... but every u_w is in the softmax's denominator
    gradOutsideVecs = np.zeros_like(outsideVectors)
    gradOutsideVecs[outsideWordIdx] = (y_hat[outsideWordIdx] - 1) * centerWordVec
    return loss, gradCenterVec, gradOutsideVecs
