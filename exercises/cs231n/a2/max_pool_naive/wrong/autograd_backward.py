import torch
import torch.nn.functional as F


def max_pool_forward_naive(x, pool_param):
    xt = torch.tensor(x, requires_grad=True)
    kernel = (pool_param["pool_height"], pool_param["pool_width"])
    out = F.max_pool2d(xt, kernel, stride=pool_param["stride"])
    return out.detach().numpy(), (xt, out)


def max_pool_backward_naive(dout, cache):
    xt, out = cache
    out.backward(torch.tensor(dout))
    return xt.grad.numpy()
