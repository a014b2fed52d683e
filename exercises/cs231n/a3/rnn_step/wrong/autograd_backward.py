import torch


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, prev_h, Wx, Wh, b)]
    xt, ht, wx, wh, bt = leaves
    next_h = torch.tanh(xt @ wx + ht @ wh + bt)
    return next_h.detach().numpy(), (next_h, leaves)


def rnn_step_backward(dnext_h, cache):
    next_h, leaves = cache
    next_h.backward(torch.tensor(dnext_h))
    return tuple(leaf.grad.numpy() for leaf in leaves)
