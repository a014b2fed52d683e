import torch


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X @ W
    P = torch.softmax(scores, dim=1)
    loss = -torch.log(P[torch.arange(num_train), y]).sum() / num_train + reg * (W * W).sum()
    P[torch.arange(num_train), y] -= 1
    dW = X.T @ P / num_train + 2 * reg * W
    return loss, dW
