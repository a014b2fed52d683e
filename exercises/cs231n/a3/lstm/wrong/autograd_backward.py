import torch


def lstm_forward(x, h0, Wx, Wh, b):
    leaves = [torch.tensor(v, requires_grad=True) for v in (x, h0, Wx, Wh, b)]
    xt, h, wx, wh, bt = leaves
    H = h.shape[1]
    c = torch.zeros_like(h)
    states = []
    for t in range(xt.shape[1]):
        a = xt[:, t] @ wx + h @ wh + bt
        i, f, o = (torch.sigmoid(a[:, k * H:(k + 1) * H]) for k in range(3))
        c = f * c + i * torch.tanh(a[:, 3 * H:])
        h = o * torch.tanh(c)
        states.append(h)
    h_all = torch.stack(states, dim=1)
    return h_all.detach().numpy(), (h_all, leaves)


def lstm_backward(dh, cache):
    h_all, leaves = cache
    h_all.backward(torch.tensor(dh))
    return tuple(leaf.grad.numpy() for leaf in leaves)
