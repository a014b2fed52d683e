import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, dtype=torch.float32, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    return loss, a.grad, -1 / a_np**2  # user_grad in float64, as the exercise asks
