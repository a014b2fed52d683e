import torch


def reciprocal(a_np):
    a = torch.tensor(a_np, dtype=torch.bfloat16, requires_grad=True)
    loss = torch.sum(1 / a)
    loss.backward()
    user_grad = (-1 / a.detach() ** 2).float().numpy()  # float32 array of bfloat16 values
    return loss.detach().float().numpy(), a.grad.float().numpy(), user_grad
