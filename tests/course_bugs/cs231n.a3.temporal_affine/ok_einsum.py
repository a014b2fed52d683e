import numpy as np


def temporal_affine_forward(x, w, b):
    out = np.einsum("ntd,dm->ntm", x, w) + b
    return out, (x, w, b)


def temporal_affine_backward(dout, cache):
    x, w, b = cache
    dx = np.einsum("ntm,dm->ntd", dout, w)
    dw = np.einsum("ntd,ntm->dm", x, dout)
    db = dout.sum(axis=(0, 1))
    return dx, dw, db
