import numpy as np


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    """One timestep of a vanilla RNN: returns (next_h, cache), next_h = tanh(x @ Wx + prev_h @ Wh + b)."""
    # YOUR CODE HERE (you may reuse your rnn_step exercise)
    raise NotImplementedError("rnn_step_forward is not written yet")
    # END YOUR CODE


def rnn_step_backward(dnext_h, cache):
    """Backward pass for one timestep: returns (dx, dprev_h, dWx, dWh, db)."""
    # YOUR CODE HERE (you may reuse your rnn_step exercise)
    raise NotImplementedError("rnn_step_backward is not written yet")
    # END YOUR CODE


def rnn_forward(x, h0, Wx, Wh, b):
    """Run a vanilla RNN forward on an entire sequence of data.

    Inputs:
    - x: input data for the entire timeseries, of shape (N, T, D)
    - h0: initial hidden state, of shape (N, H)
    - Wx: input-to-hidden weights, of shape (D, H)
    - Wh: hidden-to-hidden weights, of shape (H, H)
    - b: biases, of shape (H,)

    Returns a tuple of:
    - h: hidden states for the entire timeseries, of shape (N, T, H)
    - cache: values needed in the backward pass
    """
    h, cache = None, None
    # YOUR CODE HERE: a loop over the timesteps, calling rnn_step_forward
    raise NotImplementedError("rnn_forward is not written yet")
    # END YOUR CODE
    return h, cache


def rnn_backward(dh, cache):
    """Backward pass for a vanilla RNN over an entire sequence of data.

    Inputs:
    - dh: upstream gradients of all hidden states, of shape (N, T, H)
    - cache: the cache from rnn_forward

    Returns a tuple of:
    - dx: gradient of the inputs, of shape (N, T, D)
    - dh0: gradient of the initial hidden state, of shape (N, H)
    - dWx: gradient of the input-to-hidden weights, of shape (D, H)
    - dWh: gradient of the hidden-to-hidden weights, of shape (H, H)
    - db: gradient of the biases, of shape (H,)
    """
    dx, dh0, dWx, dWh, db = None, None, None, None, None
    # YOUR CODE HERE: walk the timesteps backwards, calling rnn_step_backward
    raise NotImplementedError("rnn_backward is not written yet")
    # END YOUR CODE
    return dx, dh0, dWx, dWh, db
