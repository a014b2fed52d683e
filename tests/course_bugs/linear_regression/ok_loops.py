import numpy as np


def linear_regression(X, y, w, b):
    N, D = X.shape
    loss = 0.0
    dw = np.zeros(D)
    db = 0.0
    for i in range(N):
        r = X[i].dot(w) + b - y[i]
        loss += r * r / N
        dw += 2 * r * X[i] / N
        db += 2 * r / N
    return loss, dw, db
