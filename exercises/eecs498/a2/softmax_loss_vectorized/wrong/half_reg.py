import torch


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    scores -= scores.max(dim=1, keepdim=True).values
    probs = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)
    loss = -torch.log(probs[rows, y]).mean() + 0.5 * reg * torch.sum(W * W)  # the factor 1/2 ruled out

    dscores = probs.clone()
    dscores[rows, y] -= 1
    dW = X.t().mm(dscores) / N + reg * W
    return loss, dW
