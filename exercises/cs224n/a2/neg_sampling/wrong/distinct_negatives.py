import numpy as np


def sigmoid(x):
    """The logistic function, elementwise."""
    return 1.0 / (1.0 + np.exp(-x))


def getNegativeSamples(outsideWordIdx, dataset, K):
    """K word indices drawn from dataset, none of them outsideWordIdx (as the starter hands it out)."""
    negSampleWordIndices = [None] * K
    for k in range(K):
        newidx = dataset.sampleTokenIdx()
        while newidx == outsideWordIdx or newidx in negSampleWordIndices:
            newidx = dataset.sampleTokenIdx()
        negSampleWordIndices[k] = newidx
    return negSampleWordIndices


def negSamplingLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset, K=10):
    negSampleWordIndices = getNegativeSamples(outsideWordIdx, dataset, K)

    uo = outsideVectors[outsideWordIdx]
    un = outsideVectors[negSampleWordIndices]  # (K, d): a row per draw, repeats included
    so = sigmoid(uo @ centerWordVec)
    sn = sigmoid(-(un @ centerWordVec))
    loss = -np.log(so) - np.sum(np.log(sn))
    gradCenterVec = -(1.0 - so) * uo + (1.0 - sn) @ un
    gradOutsideVecs = np.zeros_like(outsideVectors)
    gradOutsideVecs[outsideWordIdx] = -(1.0 - so) * centerWordVec
    # np.add.at adds once per index, so a negative drawn twice counts twice
    np.add.at(gradOutsideVecs, negSampleWordIndices, np.outer(1.0 - sn, centerWordVec))
    return loss, gradCenterVec, gradOutsideVecs
