import numpy as np


def affine_backward(dout, cache):
    """Backward pass of an affine layer out = x @ w + b.

    Args:
        dout: float64 numpy array of shape (N, M): the upstream gradient d loss / d out.
        cache: the tuple (x, w, b) saved by the forward pass:
            x: float64 numpy array of shape (N, D), the layer's input,
            w: float64 numpy array of shape (D, M), the weights,
            b: float64 numpy array of shape (M,), the bias.

    Returns:
        dx: d loss / dx, shape (N, D).
        dw: d loss / dw, shape (D, M).
        db: d loss / db, shape (M,).
    """
    x, w, b = cache
    # YOUR CODE HERE: each gradient has the shape of its input; let the shapes pick the products.
    raise NotImplementedError("affine_backward is not written yet")
    # END YOUR CODE
    return dx, dw, db
