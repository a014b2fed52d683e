import torch


def svm_loss_vectorized(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    """Multiclass SVM (hinge) loss with L2 regularisation, and its gradient d loss / dW, without loops.

    Args:
        W: float64 tensor of shape (D, C): the weights.
        X: float64 tensor of shape (N, D): one example per row.
        y: int64 tensor of shape (N,): each example's class label, in [0, C-1].
        reg: a Python float, the regularisation strength (no factor 1/2: reg * torch.sum(W * W)).

    Returns:
        loss: a 0-d tensor, sum over i and j != y_i of max(0, s_ij - s_iy_i + 1), divided by N, plus
            reg * torch.sum(W * W), where s = X @ W.
        dW: d loss / dW, a tensor of shape (D, C), derived by hand (not with autograd).
    """
    loss = 0.0
    dW = torch.zeros_like(W)

    # YOUR CODE HERE: scores = X @ W; margins for every class, then zero the correct class's own.
    # Each positive margin adds +1 to its class's score gradient and -1 to the correct class's;
    # divide by N, dW = X.T @ dscores, plus the gradient of reg * torch.sum(W * W).
    raise NotImplementedError("svm_loss_vectorized is not written yet")
    # END YOUR CODE
    return loss, dW
