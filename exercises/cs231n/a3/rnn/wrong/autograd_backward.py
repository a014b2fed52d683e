import torch


def rnn_forward(x, h0, Wx, Wh, b):
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, h0, Wx, Wh, b)]
    xt, h, wx, wh, bt = leaves
    states = []
    for t in range(xt.shape[1]):
        h = torch.tanh(xt[:, t] @ wx + h @ wh + bt)
        states.append(h)
    h_all = torch.stack(states, dim=1)
    return h_all.detach().numpy(), (h_all, leaves)


def rnn_backward(dh, cache):
    h_all, leaves = cache
    h_all.backward(torch.tensor(dh))
    return tuple(leaf.grad.numpy() for leaf in leaves)
