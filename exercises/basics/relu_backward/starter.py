import numpy as np


def relu_backward(dout, cache):
    """Backward pass of a ReLU layer out = max(0, x), applied entrywise.

    Args:
        dout: float64 numpy array of the shape of x: the upstream gradient d loss / d out.
        cache: x, the float64 numpy array the forward pass received (here of shape (N, D)).

    Returns:
        dx: d loss / dx, a float64 numpy array of the shape of x (one array, not a tuple).
    """
    x = cache
    # YOUR CODE HERE: the local derivative is 1 where x > 0 and 0 elsewhere.
    raise NotImplementedError("relu_backward is not written yet")
    # END YOUR CODE
    return dx
