import torch


def softmax_loss_vectorized(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    N = X.shape[0]
    rows = torch.arange(N)
    scores = X.mm(W)  # (N, C)
    scores = scores - scores.max(dim=1, keepdim=True).values  # each row's maximum: no overflow
    log_probs = scores - torch.logsumexp(scores, dim=1, keepdim=True)  # log softmax, (N, C)
    loss = -log_probs[rows, y].mean() + reg * torch.sum(W * W)

    dscores = log_probs.exp()  # P = softmax(scores)
    dscores[rows, y] -= 1  # P - Y
    dW = X.t().mm(dscores) / N + 2 * reg * W  # chain rule through X @ W, plus the penalty's gradient
    return loss, dW
