import torch


def softplus_tails(x):
    xt = torch.tensor(x, requires_grad=True)
    loss = torch.log1p(torch.exp(xt)).sum()
    loss.backward()
    return loss.item(), xt.grad.numpy()
