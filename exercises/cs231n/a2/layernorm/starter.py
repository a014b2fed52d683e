import numpy as np


def layernorm_forward(x, gamma, beta, ln_param):
    """Forward pass for layer normalization.

    During both training and test-time, the incoming data is normalized per data-point, before being
    scaled by gamma and beta parameters identical to that of batch normalization.

    Input:
    - x: Data of shape (N, D)
    - gamma: Scale parameter of shape (D,)
    - beta: Shift paremeter of shape (D,)
    - ln_param: Dictionary with the following keys:
        - eps: Constant for numeric stability

    Returns a tuple of:
    - out: of shape (N, D)
    - cache: whatever layernorm_backward needs; the grader never looks in it
    """
    out, cache = None, None
    eps = ln_param.get("eps", 1e-5)
    # YOUR CODE HERE
    raise NotImplementedError("layernorm_forward is not written yet")
    # END YOUR CODE
    return out, cache


def layernorm_backward(dout, cache):
    """Backward pass for layer normalization, by hand (no autograd).

    For this implementation, you can heavily rely on the work you've done already for batch
    normalization.

    Inputs:
    - dout: Upstream derivatives, of shape (N, D)
    - cache: what layernorm_forward returned as its cache

    Returns a tuple of:
    - dx: Gradient with respect to inputs x, of shape (N, D)
    - dgamma: Gradient with respect to scale parameter gamma, of shape (D,)
    - dbeta: Gradient with respect to shift parameter beta, of shape (D,)
    """
    dx, dgamma, dbeta = None, None, None
    # YOUR CODE HERE
    raise NotImplementedError("layernorm_backward is not written yet")
    # END YOUR CODE
    return dx, dgamma, dbeta
