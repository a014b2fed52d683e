# A numpy-looking hand-in of CS231n's affine layer whose gradients come from autograd, the library
# imported by a route that never spells its name (ROUTE, which a test rewrites). Its worker without the
# library refuses it, and the grader runs the hand-in again in a worker with it, whose checked worker's
# autograd is wrong: it earns nothing for its by-hand returns either way. With HONEST, it only converts
# arrays with the library and derives the gradients itself: full marks, once graded with the library.
import importlib
import os
import sys

import numpy as np

NAME = "to" + "rch"
ROUTE = "by name"
HONEST = False
SITE = os.path.dirname(os.path.dirname(np.__file__))


def library():
    if ROUTE == "its folder on sys.path again":
        sys.path.insert(0, SITE)
    return importlib.import_module(NAME)


def affine_forward(x, w, b):
    return x.reshape(x.shape[0], -1) @ w + b, (x, w, b)


def affine_backward(dout, cache):
    lib = library()
    if HONEST:
        x, w, _ = (lib.tensor(np.asarray(a)).numpy() for a in cache)
        dx = (dout @ w.T).reshape(x.shape)
        return dx, x.reshape(x.shape[0], -1).T @ dout, dout.sum(axis=0)
    x, w, b = (lib.tensor(np.asarray(a), requires_grad=True) for a in cache)
    out = x.reshape(x.shape[0], -1) @ w + b
    out.backward(lib.tensor(dout))
    return x.grad.numpy(), w.grad.numpy(), b.grad.numpy()
