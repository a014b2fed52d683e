import numpy as np


def softmax(x):
    """Softmax of a vector."""
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def naiveSoftmaxLossAndGradient(centerWordVec, outsideWordIdx, outsideVectors, dataset):
    """The naive softmax loss for one (center, outside) pair, and its gradients.

    Returns:
        loss: -log(softmax(U v_c)[o]).
        gradCenterVec: d loss / d v_c, shape (d,).
        gradOutsideVecs: d loss / d U, shape (V, d).
    """
    # YOUR CODE HERE
    raise NotImplementedError("naiveSoftmaxLossAndGradient is not written yet")
    # END YOUR CODE
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
    """The skip-gram loss for one window: word2vecLossAndGradient summed over its outside words.

    Args:
        currentCenterWord: the center word, a str.
        windowSize: words on each side of the center (an int).
        outsideWords: the window's outside words, a list of str.
        word2Ind: a dict from each word to its index in the vocabulary.
        centerWordVectors, outsideVectors: shape (V, d), a row per word.
        dataset: the dataset object, for word2vecLossAndGradient.

    Returns:
        loss, gradCenterVecs (V, d), gradOutsideVectors (V, d).
    """
    # YOUR CODE HERE
    raise NotImplementedError("skipgram is not written yet")
    # END YOUR CODE
    return loss, gradCenterVecs, gradOutsideVectors
