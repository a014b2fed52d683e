"""The complex step with its unit made at import, where no trial is watched, and only operators, ufuncs
and a ufunc's reduce in the trial (no complex value passes through a Python function or a local)."""
import numpy as np

_I = np.emath.sqrt(-1.0)


def graph2(W_np, x_np, b_np):
    f = np.sum(1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np))))
    grad = np.empty_like(W_np)
    for k in range(W_np.size):
        E = np.zeros(W_np.shape)
        E.flat[k] = 1e-20
        grad.flat[k] = np.add.reduce(1.0 / (1.0 + np.exp(-((W_np + _I * E) @ x_np + b_np))), axis=None).imag / 1e-20
    return f, grad.copy(), grad
