import torch


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    leaves = [torch.tensor(v, requires_grad=True) for v in (x, prev_h, prev_c, Wx, Wh, b)]
    xt, h, c, wx, wh, bt = leaves
    H = h.shape[1]
    a = xt @ wx + h @ wh + bt
    i, f, o = (torch.sigmoid(a[:, k * H:(k + 1) * H]) for k in range(3))
    g = torch.tanh(a[:, 3 * H:])
    next_c = f * c + i * g
    next_h = o * torch.tanh(next_c)
    return next_h.detach().numpy(), next_c.detach().numpy(), (next_h, next_c, leaves)


def lstm_step_backward(dnext_h, dnext_c, cache):
    next_h, next_c, leaves = cache
    torch.autograd.backward([next_h, next_c], [torch.tensor(dnext_h), torch.tensor(dnext_c)])
    x, h, c, wx, wh, bt = (leaf.grad.numpy() for leaf in leaves)
    return x, h, c, wx, wh, bt
