import torch


def softmax_loss_vectorized(W, X, y, reg):
    # One shift for the whole batch, loss and gradient by autograd, in float64 torch.
    W = torch.tensor(W, requires_grad=True)
    scores = torch.from_numpy(X) @ W
    shifted = scores - scores.max()
    p = torch.exp(shifted) / torch.exp(shifted).sum(dim=1, keepdim=True)
    data_loss = -torch.log(p[torch.arange(X.shape[0]), torch.from_numpy(y)]).mean()
    loss = data_loss + reg * torch.sum(W * W)
    loss.backward()
    return loss.item(), W.grad.numpy()
