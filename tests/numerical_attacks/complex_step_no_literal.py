"""The complex step with no complex constant in the file: the unit made at run time."""
import numpy as np


def _unit():
    return np.emath.sqrt(-1.0)


def graph2(W_np, x_np, b_np):
    f = np.sum(1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np))))
    h = 1e-22
    i_h = _unit() * h
    grad = np.empty_like(W_np)
    for k in range(W_np.size):
        E = np.zeros(W_np.shape)
        E.flat[k] = 1.0
        grad.flat[k] = np.imag(np.sum(1.0 / (1.0 + np.exp(-((W_np + i_h * E) @ x_np + b_np))))) / h
    auto = grad.copy()
    return f, auto, grad
