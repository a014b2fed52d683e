import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward(retain_graph=True)
    loss.backward()  # a.grad accumulates: 2 * d loss / da
    a_ = a_np
    return loss, a.grad, -1 / a_**2
