import numpy as np
import torch


def graph1(a_np, b_np, c_np):
    """Compute f = (a * c) / (a + b) and its gradient df/da in two ways.

    Args:
        a_np, b_np, c_np: float64 numpy arrays of shape (1,).

    Returns:
        f: the value of f (a torch tensor, numpy array or number with one element).
        auto_grad: df/da computed by PyTorch autograd (call f.backward() and read a.grad).
        user_grad: df/da derived by hand and computed with numpy from a_np, b_np, c_np.
    """
    # YOUR CODE HERE: build the graph x = a * c, y = a + b, f = x / y with torch tensors
    # (torch.tensor(a_np, requires_grad=True) keeps float64), then compute both gradients.
    raise NotImplementedError("graph1 is not written yet")
    # END YOUR CODE
    return f, auto_grad, user_grad
