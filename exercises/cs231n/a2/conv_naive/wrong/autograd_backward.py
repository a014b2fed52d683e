import numpy as np
import torch
import torch.nn.functional as F


def conv_forward_naive(x, w, b, conv_param):
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    out = F.conv2d(xt, wt, bt, stride=conv_param["stride"], padding=conv_param["pad"])
    return out.detach().numpy(), (xt, wt, bt, out)


def conv_backward_naive(dout, cache):
    xt, wt, bt, out = cache
    out.backward(torch.tensor(dout))
    return xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()
