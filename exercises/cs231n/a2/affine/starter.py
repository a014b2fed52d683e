import numpy as np


def affine_forward(x, w, b):
    """Computes the forward pass for an affine (fully connected) layer.

    The input x has shape (N, d_1, ..., d_k) and contains a minibatch of N examples, where each example
    x[i] has shape (d_1, ..., d_k). Reshape each input into a vector of dimension D = d_1 * ... * d_k,
    and then transform it to an output vector of dimension M.

    Inputs:
    - x: A numpy array containing input data, of shape (N, d_1, ..., d_k)
    - w: A numpy array of weights, of shape (D, M)
    - b: A numpy array of biases, of shape (M,)

    Returns a tuple of:
    - out: output, of shape (N, M)
    - cache: (x, w, b), or whatever affine_backward needs; the grader never looks in it
    """
    out = None
    # YOUR CODE HERE: reshape x into rows, then out = rows @ w + b.
    raise NotImplementedError("affine_forward is not written yet")
    # END YOUR CODE
    cache = (x, w, b)
    return out, cache


def affine_backward(dout, cache):
    """Computes the backward pass for an affine layer, by hand (no autograd).

    Inputs:
    - dout: Upstream derivative, of shape (N, M)
    - cache: what affine_forward returned as its cache

    Returns a tuple of:
    - dx: Gradient with respect to x, of shape (N, d1, ..., d_k)
    - dw: Gradient with respect to w, of shape (D, M)
    - db: Gradient with respect to b, of shape (M,)
    """
    x, w, b = cache
    dx, dw, db = None, None, None
    # YOUR CODE HERE: each gradient has the shape of its input.
    raise NotImplementedError("affine_backward is not written yet")
    # END YOUR CODE
    return dx, dw, db
