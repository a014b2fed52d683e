import numpy as np
import torch


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def graph2(W_np, x_np, b_np):
    """Compute f = sum(sigmoid(W @ x + b)) and its gradient df/dW in two ways.

    Args:
        W_np: float64 numpy array of shape (d, d).
        x_np, b_np: float64 numpy arrays of shape (d, 1).

    Returns:
        f: the value of f (a one-element torch tensor, numpy array or number).
        auto_grad: df/dW computed by PyTorch autograd (call f.backward() and read W.grad), shape (d, d).
        user_grad: df/dW derived by hand and computed with numpy, shape (d, d).
    """
    # YOUR CODE HERE: build u = W x + b, g = sigmoid(u), f = sum(g) with torch tensors
    # (torch.tensor(W_np, requires_grad=True) keeps float64), then compute both gradients.
    raise NotImplementedError("graph2 is not written yet")
    # END YOUR CODE
    return f, auto_grad, user_grad
