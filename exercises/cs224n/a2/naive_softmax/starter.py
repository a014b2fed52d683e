#!/usr/bin/env python

import numpy as np
import random

from utils.gradcheck import gradcheck_naive, grad_tests_softmax
from utils.utils import normalizeRows, softmax


def naiveSoftmaxLossAndGradient(
    centerWordVec,
    outsideWordIdx,
    outsideVectors,
    dataset
):
    """ Naive Softmax loss & gradient function for word2vec models

    Arguments:
    centerWordVec -- numpy ndarray, the center word's embedding v_c, shape (d,)
    outsideWordIdx -- integer, the index o of the outside word
    outsideVectors -- the outside vectors U of every word in the vocabulary, as rows: shape (V, d)
    dataset -- needed for negative sampling, unused here.

    Return:
    loss -- naive softmax loss, -log softmax(U @ v_c)[o]
    gradCenterVec -- the gradient with respect to the center word vector (dJ / dv_c), shape (d,)
    gradOutsideVecs -- the gradient with respect to all the outside word vectors (dJ / dU), shape (V, d)
    """

    ### YOUR CODE HERE
    ### Please use the provided softmax function (imported earlier in this file)
    raise NotImplementedError("naiveSoftmaxLossAndGradient is not written yet")
    ### END YOUR CODE

    return loss, gradCenterVec, gradOutsideVecs
