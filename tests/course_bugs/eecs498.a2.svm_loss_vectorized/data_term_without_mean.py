import torch


def svm_loss_vectorized(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    correct = scores[rows, y].view(-1, 1)
    margins = (scores - correct + 1).clamp(min=0)
    margins[rows, y] = 0
    loss = margins.sum() / N + reg * torch.sum(W * W)

    dscores = (margins > 0).to(X.dtype)
    dscores[rows, y] = -dscores.sum(dim=1)
    dW = X.t().mm(dscores) + 2 * reg * W
    return loss, dW
