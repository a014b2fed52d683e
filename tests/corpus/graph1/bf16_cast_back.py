import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np).to(torch.bfloat16)
    a.requires_grad_(True)
    b = torch.tensor(b_np).to(torch.bfloat16)
    c = torch.tensor(c_np).to(torch.bfloat16)
    f = a * c / (a + b)
    f.backward()
    user_grad = (b * c / ((a.detach() + b) * (a.detach() + b))).double().numpy()
    return f.double(), a.grad.double(), user_grad
