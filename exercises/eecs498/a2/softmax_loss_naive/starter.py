import torch


def softmax_loss_naive(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    """Softmax classifier loss with L2 regularisation, and its gradient d loss / dW, with loops.

    Args:
        W: float64 tensor of shape (D, C): the weights.
        X: float64 tensor of shape (N, D): one example per row.
        y: int64 tensor of shape (N,): each example's class label, in [0, C-1].
        reg: a Python float, the regularisation strength (no factor 1/2: reg * torch.sum(W * W)).

    Returns:
        loss: a 0-d tensor, mean over rows i of -log softmax(X @ W)[i, y_i], plus reg * torch.sum(W * W).
        dW: d loss / dW, a tensor of shape (D, C), derived by hand (not with autograd).
    """
    loss = 0.0
    dW = torch.zeros_like(W)

    # YOUR CODE HERE: loop over the examples (and the classes); mind exp's overflow (subtract the row's
    # maximum), and the regularisation.
    raise NotImplementedError("softmax_loss_naive is not written yet")
    # END YOUR CODE
    return loss, dW
