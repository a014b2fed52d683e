import numpy as np


def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    """Computes the forward pass for spatial batch normalization.

    Inputs:
    - x: Input data of shape (N, C, H, W)
    - gamma: Scale parameter, of shape (C,)
    - beta: Shift parameter, of shape (C,)
    - bn_param: Dictionary with the following keys:
      - mode: 'train' (the only mode graded here)
      - eps: Constant for numeric stability

    Returns a tuple of:
    - out: Output data, of shape (N, C, H, W)
    - cache: Values needed for the backward pass; the grader never looks in it

    Implement the forward pass for spatial batch normalization. HINT: You can implement spatial batch
    normalization by calling the vanilla version of batch normalization you implemented above (define
    batchnorm_forward in this file too). Your implementation should be very short; ours is less than
    five lines.
    """
    out, cache = None, None
    # YOUR CODE HERE
    raise NotImplementedError("spatial_batchnorm_forward is not written yet")
    # END YOUR CODE
    return out, cache


def spatial_batchnorm_backward(dout, cache):
    """Computes the backward pass for spatial batch normalization, by hand (no autograd).

    Inputs:
    - dout: Upstream derivatives, of shape (N, C, H, W)
    - cache: Values from the forward pass

    Returns a tuple of:
    - dx: Gradient with respect to inputs, of shape (N, C, H, W)
    - dgamma: Gradient with respect to scale parameter, of shape (C,)
    - dbeta: Gradient with respect to shift parameter, of shape (C,)
    """
    dx, dgamma, dbeta = None, None, None
    # YOUR CODE HERE
    raise NotImplementedError("spatial_batchnorm_backward is not written yet")
    # END YOUR CODE
    return dx, dgamma, dbeta
