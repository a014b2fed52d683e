import numpy as np


def softmax(x):
    """Softmax of a vector, shifted by its maximum so that exp never overflows."""
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    y_hat = softmax(outsideVectors @ centerWordVec)
    loss = -np.log(y_hat[outsideWordIdx])
    delta = y_hat.copy()
    delta[outsideWordIdx] -= 1.0
    gradCenterVec = outsideVectors.T @ delta
    gradOutsideVecs = np.outer(delta, centerWordVec)
    return loss, gradCenterVec, gradOutsideVecs


def skipgram(
    currentCenterWord,
    windowSize,
    outsideWords,
    word2Ind,
    centerWordVectors,
    outsideVectors,
    dataset,
    word2vecLossAndGradient=naiveSoftmaxLossAndGradient,
):
    loss = 0.0
    gradCenterVecs = np.zeros(centerWordVectors.shape)
    gradOutsideVectors = np.zeros(outsideVectors.shape)
    centerIdx = word2Ind[currentCenterWord]
    for word in outsideWords:
        wordLoss, gradCenter, gradOutside = word2vecLossAndGradient(
            centerWordVectors[centerIdx], word2Ind[word], outsideVectors, dataset
        )
        loss += wordLoss
        gradCenterVecs[centerIdx] = gradCenter
        gradOutsideVectors += gradOutside
    return loss, gradCenterVecs, gradOutsideVectors
