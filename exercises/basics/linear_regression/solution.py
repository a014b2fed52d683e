import numpy as np


def linear_regression(X, y, w, b):
    N = X.shape[0]
    residual = X @ w + b - y  # (N,): prediction minus target
    loss = np.mean(residual**2)
    dpred = 2.0 * residual / N  # d loss / d pred: the 2 of the square, the 1/N of the mean
    dw = X.T @ dpred  # (D,): pred_i = X[i] @ w + b
    db = np.sum(dpred)  # every prediction has slope 1 in b
    return loss, dw, db
