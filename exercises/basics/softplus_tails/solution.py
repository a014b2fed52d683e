import numpy as np


def softplus_tails(x):
    e = np.exp(x)  # tiny, but exact to float64's relative precision
    loss = np.log1p(e).sum()  # log(1 + e) without forming 1 + e
    grad = e / (1.0 + e)  # sigmoid(x): the ratio keeps e's digits
    return loss, grad
