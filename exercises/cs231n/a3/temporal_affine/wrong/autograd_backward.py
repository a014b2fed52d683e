import torch


def temporal_affine_forward(x, w, b):
    leaves = [torch.tensor(v, requires_grad=True) for v in (x, w, b)]
    xt, wt, bt = leaves
    out = xt @ wt + bt
    return out.detach().numpy(), (out, leaves)


def temporal_affine_backward(dout, cache):
    out, leaves = cache
    out.backward(torch.tensor(dout))
    return tuple(leaf.grad.numpy() for leaf in leaves)
