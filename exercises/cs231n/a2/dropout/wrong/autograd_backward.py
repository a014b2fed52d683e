import numpy as np
import torch


def dropout_forward(x, dropout_param):
    p = dropout_param["p"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    mask = torch.tensor((np.random.rand(*x.shape) < p) / p)
    xt = torch.tensor(x, requires_grad=True)
    out = xt * mask
    return out.detach().numpy(), (out, xt)


def dropout_backward(dout, cache):
    out, xt = cache
    out.backward(torch.tensor(dout))  # torch's backward pass
    return xt.grad.numpy()
