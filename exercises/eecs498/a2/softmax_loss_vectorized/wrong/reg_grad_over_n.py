import torch


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X.mm(W)
    scores = scores - scores.max(dim=1, keepdim=True).values
    probs = torch.softmax(scores, dim=1)
    loss = -torch.log(probs[torch.arange(num_train), y]).sum()
    loss = loss / num_train + reg * torch.sum(W * W)

    dscores = probs.clone()
    dscores[torch.arange(num_train), y] -= 1
    dW = X.t().mm(dscores) + 2 * reg * W
    dW /= num_train  # the whole gradient averaged, the regularisation's term with it
    return loss, dW
