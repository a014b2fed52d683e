import numpy as np


def rnn_step_backward(dnext_h, cache):
    """Backward pass of one vanilla RNN step next_h = tanh(x @ Wx + prev_h @ Wh + b).

    Args:
        dnext_h: float64 numpy array of shape (N, H): the upstream gradient d loss / d next_h.
        cache: the tuple (x, prev_h, Wx, Wh, b) saved by the forward pass:
            x: float64 numpy array of shape (N, D), the input at this step,
            prev_h: float64 numpy array of shape (N, H), the previous hidden state,
            Wx: float64 numpy array of shape (D, H), input-to-hidden weights,
            Wh: float64 numpy array of shape (H, H), hidden-to-hidden weights,
            b: float64 numpy array of shape (H,), the bias.

    Returns:
        dx: d loss / dx, shape (N, D).
        dprev_h: d loss / dprev_h, shape (N, H).
        dWx: d loss / dWx, shape (D, H).
        dWh: d loss / dWh, shape (H, H).
        db: d loss / db, shape (H,).
    """
    x, prev_h, Wx, Wh, b = cache
    # YOUR CODE HERE: recompute next_h, go back through the tanh (da), then through the two affine maps.
    raise NotImplementedError("rnn_step_backward is not written yet")
    # END YOUR CODE
    return dx, dprev_h, dWx, dWh, db
