import numpy as np


def two_layer_net(X, y, W1, b1, W2, b2, reg):
    """Loss of a two-layer network (affine - ReLU - affine - softmax) and its gradients.

    Args:
        X: float64 numpy array of shape (N, D): one example per row.
        y: int64 numpy array of shape (N,): each example's class label, in [0, C-1].
        W1, b1: first layer, shapes (D, H) and (H,).
        W2, b2: second layer, shapes (H, C) and (C,).
        reg: the L2 regularisation strength, a float64 number (a 0-d numpy array).

    Returns:
        loss: mean softmax cross-entropy of scores = relu(X @ W1 + b1) @ W2 + b2,
            plus 0.5 * reg * (sum(W1 * W1) + sum(W2 * W2)).
        dW1, db1, dW2, db2: the gradients of the loss, each of its parameter's shape.
    """
    N = X.shape[0]
    # YOUR CODE HERE: forward pass (keep the pre-activation for the ReLU's mask), loss,
    # then backward: dscores, dW2, db2, dh, the ReLU, dW1, db1 (and the regularisation terms).
    raise NotImplementedError("two_layer_net is not written yet")
    # END YOUR CODE
    return loss, dW1, db1, dW2, db2
