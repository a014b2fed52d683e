import numpy as np


def spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    """Spatial group normalisation, forward.

    Args:
        x: (N, C, H, W) float64 array.
        gamma, beta: (1, C, 1, 1) float64 arrays, a scale and a shift per channel.
        G: the number of groups, a Python int dividing C: channels c * C // G to (c + 1) * C // G - 1
            form group c.
        gn_param: {'eps': eps}, eps a float.

    Returns:
        out: (N, C, H, W), each example's group normalised by its own mean and biased variance over its
            C // G channels and H x W positions, then scaled by gamma and shifted by beta.
        cache: whatever spatial_groupnorm_backward needs; the grader never looks in it.
    """
    # YOUR CODE HERE
    raise NotImplementedError("spatial_groupnorm_forward is not written yet")
    # END YOUR CODE
    return out, cache


def spatial_groupnorm_backward(dout, cache):
    """Spatial group normalisation, backward, from dout = d loss / d out, shape (N, C, H, W).

    Returns:
        dx: (N, C, H, W), dgamma: (1, C, 1, 1), dbeta: (1, C, 1, 1), derived by hand (no autograd).
    """
    # YOUR CODE HERE
    raise NotImplementedError("spatial_groupnorm_backward is not written yet")
    # END YOUR CODE
    return dx, dgamma, dbeta
