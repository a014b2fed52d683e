import torch


def softmax_loss_naive(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    loss = 0.0
    dW = torch.zeros_like(W)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    for i in range(num_train):
        scores = W.t().mv(X[i])
        scores = scores - torch.max(scores)  # this row's maximum: exp cannot overflow
        log_sum = torch.log(torch.sum(torch.exp(scores)))
        loss += log_sum - scores[y[i]]  # -log softmax(scores)[y_i]
        for j in range(num_classes):
            p = torch.exp(scores[j] - log_sum)  # softmax(scores)[j]
            if j == y[i]:
                dW[:, j] += (p - 1) * X[i]
            else:
                dW[:, j] += p * X[i]
    loss /= num_train
    dW /= num_train
    loss += reg * torch.sum(W * W)
    dW += 2 * reg * W
    return loss, dW
