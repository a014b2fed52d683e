import torch


def batchnorm_backward(dout, cache):
    # torch for the forward values, the gradient by hand from them (no autograd)
    x, gamma, _beta, eps = (torch.as_tensor(a) for a in cache)
    g = torch.as_tensor(dout)
    N = x.shape[0]
    xhat = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + eps)
    dxhat = g * gamma
    dx = (N * dxhat - dxhat.sum(0) - xhat * (dxhat * xhat).sum(0)) / (
        N * torch.sqrt(x.var(0, unbiased=False) + eps)
    )
    return dx.numpy(), (g * xhat).sum(0).numpy(), g.sum(0).numpy()
