import numpy as np


def word_embedding_forward(x, W):
    """Forward pass for word embeddings.

    We operate on minibatches of size N where each sequence has length T. We assume a vocabulary of V
    words, assigning each word to a vector of dimension D.

    Inputs:
    - x: integer array of shape (N, T) giving indices of words; each element idx of x must be in the
      range 0 <= idx < V
    - W: weight matrix of shape (V, D) giving word vectors for all words

    Returns a tuple of:
    - out: array of shape (N, T, D) giving word vectors for all input words
    - cache: values needed for the backward pass
    """
    out, cache = None, None
    # YOUR CODE HERE (one line with numpy's array indexing)
    raise NotImplementedError("word_embedding_forward is not written yet")
    # END YOUR CODE
    return out, cache


def word_embedding_backward(dout, cache):
    """Backward pass for word embeddings: words are integers, so only the gradient of W is returned.

    Note that words can appear more than once in a sequence. HINT: look up the function np.add.at

    Inputs:
    - dout: upstream gradients of shape (N, T, D)
    - cache: values from the forward pass

    Returns:
    - dW: gradient of the word embedding matrix, of shape (V, D)
    """
    dW = None
    # YOUR CODE HERE
    raise NotImplementedError("word_embedding_backward is not written yet")
    # END YOUR CODE
    return dW
