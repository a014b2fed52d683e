import torch


def softmax_loss_vectorized(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)
    scores = scores - scores.max(dim=1, keepdim=True).values
    log_probs = scores - torch.logsumexp(scores, dim=1, keepdim=True)
    loss = -log_probs[rows, y].mean() + reg * torch.sum(W * W)

    dscores = log_probs.exp()
    dscores[rows, y] -= 1
    dW = X.t().mm(dscores) + 2 * reg * W
    return loss, dW
