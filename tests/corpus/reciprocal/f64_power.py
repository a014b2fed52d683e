import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    return loss, a.grad, -1 / a_np**2
