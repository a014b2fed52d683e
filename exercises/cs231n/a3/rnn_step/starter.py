import numpy as np


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    """One timestep of a vanilla RNN with a tanh activation.

    Inputs:
    - x: input data for this timestep, of shape (N, D)
    - prev_h: hidden state from the previous timestep, of shape (N, H)
    - Wx: input-to-hidden weights, of shape (D, H)
    - Wh: hidden-to-hidden weights, of shape (H, H)
    - b: biases, of shape (H,)

    Returns a tuple of:
    - next_h: next hidden state, of shape (N, H)
    - cache: tuple of values needed for the backward pass
    """
    next_h, cache = None, None
    # YOUR CODE HERE
    raise NotImplementedError("rnn_step_forward is not written yet")
    # END YOUR CODE
    return next_h, cache


def rnn_step_backward(dnext_h, cache):
    """Backward pass for one timestep of a vanilla RNN.

    Inputs:
    - dnext_h: gradient of the loss with respect to the next hidden state, of shape (N, H)
    - cache: the cache object from the forward pass

    Returns a tuple of:
    - dx: gradient of the input data, of shape (N, D)
    - dprev_h: gradient of the previous hidden state, of shape (N, H)
    - dWx: gradient of the input-to-hidden weights, of shape (D, H)
    - dWh: gradient of the hidden-to-hidden weights, of shape (H, H)
    - db: gradient of the bias vector, of shape (H,)
    """
    dx, dprev_h, dWx, dWh, db = None, None, None, None, None
    # YOUR CODE HERE
    raise NotImplementedError("rnn_step_backward is not written yet")
    # END YOUR CODE
    return dx, dprev_h, dWx, dWh, db
