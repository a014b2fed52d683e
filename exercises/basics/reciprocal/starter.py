import numpy as np
import torch


def reciprocal(a_np):
    """Compute loss = sum(1 / a) and its gradient d loss / da in two ways.

    Args:
        a_np: float64 numpy array of shape (n,).

    Returns:
        loss: the value of the loss (a one-element torch tensor, numpy array or number).
        auto_grad: d loss / da computed by PyTorch autograd (loss.backward() and a.grad), shape (n,).
        user_grad: d loss / da derived by hand and computed with numpy in float64, shape (n,).
    """
    # YOUR CODE HERE: a = torch.tensor(a_np, requires_grad=True) keeps float64
    raise NotImplementedError("reciprocal is not written yet")
    # END YOUR CODE
    return loss, auto_grad, user_grad
