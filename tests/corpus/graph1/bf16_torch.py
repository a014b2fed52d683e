import torch


def graph1(a_np, b_np, c_np):
    a = torch.tensor(a_np).to(torch.bfloat16).requires_grad_()
    b = torch.tensor(b_np).to(torch.bfloat16)
    c = torch.tensor(c_np).to(torch.bfloat16)
    f = a * c / (a + b)
    f.backward()
    with torch.no_grad():
        user_grad = b * c / (a + b) ** 2  # by hand, in bfloat16 (numpy has none)
    return f, a.grad, user_grad
