import torch


def svm_loss_vectorized(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)  # (N, C)
    correct = scores[rows, y].view(-1, 1)  # (N, 1): each row's correct-class score
    margins = (scores - correct + 1).clamp(min=0)  # delta = 1
    margins[rows, y] = 0  # the correct class is not its own competitor
    loss = margins.sum() / N + reg * torch.sum(W * W)

    dscores = (margins > 0).to(X.dtype)  # +1 for each positive margin's class
    dscores[rows, y] = -dscores.sum(dim=1)  # -1 per positive margin for the correct class
    dW = X.t().mm(dscores) / N + 2 * reg * W  # chain rule through X @ W, plus the penalty's gradient
    return loss, dW
