import numpy as np


def softplus_tails(x):
    loss = np.logaddexp(0.0, x).sum()  # log(exp(0) + exp(x)), computed stably
    grad = np.exp(x - np.logaddexp(0.0, x))  # exp(x) / (1 + exp(x)) = exp(x - softplus(x))
    return loss, grad
