import numpy as np


def dropout_forward(x, dropout_param):
    """Forward pass for inverted dropout.

    Note that this is different from the vanilla version of dropout. Here, p is the probability of
    keeping a neuron output, as opposed to the probability of dropping a neuron output.

    Inputs:
    - x: Input data, of any shape
    - dropout_param: A dictionary with the following keys:
      - p: Dropout parameter. We keep each neuron output with probability p.
      - mode: 'test' or 'train'. If the mode is train, then perform dropout; if the mode is test, then
        just return the input. (Only 'train' is graded here.)
      - seed: Seed for the random number generator. Passing seed makes this function deterministic,
        which is needed for gradient checking (and for grading: draw the mask as
        np.random.rand(*x.shape) < p right after the seed, so that it is the mask the grader expects).

    Outputs:
    - out: Array of the same shape as x.
    - cache: tuple (dropout_param, mask), or whatever dropout_backward needs; the grader never looks
      in it.
    """
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])

    mask = None
    out = None

    if mode == "train":
        # YOUR CODE HERE: the mask (kept entries scaled by 1 / p), then out.
        raise NotImplementedError("dropout_forward is not written yet")
        # END YOUR CODE
    elif mode == "test":
        out = x

    cache = (dropout_param, mask)
    out = out.astype(x.dtype, copy=False)
    return out, cache


def dropout_backward(dout, cache):
    """Backward pass for inverted dropout, by hand (no autograd).

    Inputs:
    - dout: Upstream derivatives, of any shape
    - cache: (dropout_param, mask) from dropout_forward.
    """
    dropout_param, mask = cache
    mode = dropout_param["mode"]

    dx = None
    if mode == "train":
        # YOUR CODE HERE
        raise NotImplementedError("dropout_backward is not written yet")
        # END YOUR CODE
    elif mode == "test":
        dx = dout
    return dx
