import torch


def reciprocal(a_np):
    a = torch.tensor(a_np).to(torch.bfloat16).requires_grad_()
    loss = torch.sum(1 / a)
    loss.backward()
    with torch.no_grad():
        user_grad = -1 / a**2  # by hand, in bfloat16 (numpy has none)
    return loss, a.grad, user_grad
