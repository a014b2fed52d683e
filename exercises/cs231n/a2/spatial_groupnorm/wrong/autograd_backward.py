import torch


def spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    eps = gn_param.get("eps", 1e-5)
    xt, gt, bt = (torch.tensor(a, requires_grad=True) for a in (x, gamma, beta))
    N, C, H, W = x.shape
    xg = xt.reshape(N, G, -1)
    mean = xg.mean(dim=2, keepdim=True)
    var = xg.var(dim=2, unbiased=False, keepdim=True)
    out = gt * ((xg - mean) / torch.sqrt(var + eps)).reshape(N, C, H, W) + bt
    return out.detach().numpy(), (xt, gt, bt, out)


def spatial_groupnorm_backward(dout, cache):
    xt, gt, bt, out = cache
    out.backward(torch.tensor(dout))
    return xt.grad.numpy(), gt.grad.numpy(), bt.grad.numpy()
