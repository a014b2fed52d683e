import numpy as np


def temporal_softmax_loss(x, y, mask, verbose=False):
    """A temporal version of softmax loss for use in RNNs.

    We assume that we are making predictions over a vocabulary of size V for each timestep of a
    timeseries of length T, over a minibatch of size N. The input x gives scores for all vocabulary
    elements at all timesteps, and y gives the indices of the ground-truth element at each timestep.
    We use a cross-entropy loss at each timestep, summing the loss over all timesteps and averaging
    across the minibatch. The mask tells which elements count: padded timesteps do not.

    Inputs:
    - x: input scores, of shape (N, T, V)
    - y: ground-truth indices, of shape (N, T), where each element is in the range 0 <= y[i, t] < V
    - mask: boolean array of shape (N, T) where mask[i, t] tells whether the scores at x[i, t] count

    Returns a tuple of:
    - loss: scalar giving the loss
    - dx: gradient of the loss with respect to the scores x
    """
    # YOUR CODE HERE
    raise NotImplementedError("temporal_softmax_loss is not written yet")
    # END YOUR CODE
    return loss, dx
