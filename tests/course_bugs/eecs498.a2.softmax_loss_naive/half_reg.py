import torch


def softmax_loss_naive(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    loss = 0.0
    dW = torch.zeros_like(W)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    for i in range(num_train):
        scores = W.t().mv(X[i])
        scores = scores - torch.max(scores)
        log_sum = torch.log(torch.sum(torch.exp(scores)))
        loss += log_sum - scores[y[i]]
        for j in range(num_classes):
            p = torch.exp(scores[j] - log_sum)
            if j == y[i]:
                dW[:, j] += (p - 1) * X[i]
            else:
                dW[:, j] += p * X[i]
    loss /= num_train
    dW /= num_train
    loss += 0.5 * reg * torch.sum(W * W)
    dW += reg * W
    return loss, dW
