import numpy as np


def sigmoid(x):
    """A numerically stable version of the logistic sigmoid function."""
    pos_mask = x >= 0
    neg_mask = x < 0
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    """Forward pass for a single timestep of an LSTM.

    Inputs:
    - x: input data, of shape (N, D)
    - prev_h: previous hidden state, of shape (N, H)
    - prev_c: previous cell state, of shape (N, H)
    - Wx: input-to-hidden weights, of shape (D, 4H)
    - Wh: hidden-to-hidden weights, of shape (H, 4H)
    - b: biases, of shape (4H,)

    Returns a tuple of:
    - next_h: next hidden state, of shape (N, H)
    - next_c: next cell state, of shape (N, H)
    - cache: tuple of values needed for the backward pass
    """
    next_h, next_c, cache = None, None, None
    # YOUR CODE HERE: a = x @ Wx + prev_h @ Wh + b, split into the gates i, f, o, g (in that order)
    raise NotImplementedError("lstm_step_forward is not written yet")
    # END YOUR CODE
    return next_h, next_c, cache


def lstm_step_backward(dnext_h, dnext_c, cache):
    """Backward pass for a single timestep of an LSTM.

    Inputs:
    - dnext_h: gradients of the next hidden state, of shape (N, H)
    - dnext_c: gradients of the next cell state, of shape (N, H)
    - cache: values from the forward pass

    Returns a tuple of:
    - dx: gradient of the input data, of shape (N, D)
    - dprev_h: gradient of the previous hidden state, of shape (N, H)
    - dprev_c: gradient of the previous cell state, of shape (N, H)
    - dWx: gradient of the input-to-hidden weights, of shape (D, 4H)
    - dWh: gradient of the hidden-to-hidden weights, of shape (H, 4H)
    - db: gradient of the biases, of shape (4H,)
    """
    dx, dprev_h, dprev_c, dWx, dWh, db = None, None, None, None, None, None
    # YOUR CODE HERE
    raise NotImplementedError("lstm_step_backward is not written yet")
    # END YOUR CODE
    return dx, dprev_h, dprev_c, dWx, dWh, db
