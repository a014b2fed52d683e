import numpy as np


def svm_loss_vectorized(W, X, y, reg):
  num_train = X.shape[0]
  scores = X.dot(W).T
  margins = np.maximum(0, scores - scores[y, range(num_train)] + 1)
  margins[y, range(num_train)] = 0
  loss = np.sum(margins) / num_train
  loss += 0.5 * reg * np.sum(W * W)

  ds = np.zeros(margins.shape)
  ds[margins > 0] = 1
  ds[y, range(num_train)] = -np.sum(margins > 0, axis=0)
  dW = np.dot(X.T, ds.T)
  dW /= num_train
  dW += reg * W
  return loss, dW
