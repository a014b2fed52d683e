import numpy as np


def sigmoid(x):
    """The logistic function, elementwise: 1 / (1 + exp(-x))."""
    # YOUR CODE HERE
    raise NotImplementedError("sigmoid is not written yet")
    # END YOUR CODE


def getNegativeSamples(outsideWordIdx, dataset, K):
    """K word indices drawn from dataset, none of them outsideWordIdx. Given: do not change it."""
    negSampleWordIndices = [None] * K
    for k in range(K):
        newidx = dataset.sampleTokenIdx()
        while newidx == outsideWordIdx:
            newidx = dataset.sampleTokenIdx()
        negSampleWordIndices[k] = newidx
    return negSampleWordIndices


def negSamplingLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset, K=10):
    """The negative-sampling loss for one (center, outside) pair, and its gradients.

    Args:
        centerWordVec: v_c, shape (d,).
        outsideWordIdx: o, the index of the outside word (an int).
        outsideVectors: U, shape (V, d): a row per word of the vocabulary.
        dataset: the dataset object; getNegativeSamples draws from it.
        K: how many negatives to draw.

    Returns:
        loss: -log(sigmoid(u_o . v_c)) - sum over the negatives k of log(sigmoid(-u_k . v_c)).
        gradCenterVec: d loss / d v_c, shape (d,).
        gradOutsideVecs: d loss / d U, shape (V, d).
    """
    # The negatives are drawn for you: keep this line, so that your draws are the grader's.
    negSampleWordIndices = getNegativeSamples(outsideWordIdx, dataset, K)

    # YOUR CODE HERE (use your sigmoid)
    raise NotImplementedError("negSamplingLossAndGradient is not written yet")
    # END YOUR CODE
    return loss, gradCenterVec, gradOutsideVecs
