import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np, dtype=torch.bfloat16, requires_grad=True)
    b = torch.tensor(b_np, dtype=torch.bfloat16)
    c = torch.tensor(c_np, dtype=torch.bfloat16)
    f = a * c / (a + b)
    f.backward()
    user_grad = (b * c / (a.detach() + b) ** 2).float().numpy()  # float32 array of bfloat16 values
    return f.detach().float().numpy(), a.grad.float().numpy(), user_grad
