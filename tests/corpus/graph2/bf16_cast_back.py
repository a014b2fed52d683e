import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np).to(torch.bfloat16)
    W.requires_grad = True
    u = W @ torch.tensor(x_np).to(torch.bfloat16) + torch.tensor(b_np).to(torch.bfloat16)
    f = torch.sigmoid(u).sum()
    f.backward()
    s = torch.sigmoid(u.detach())
    user_grad = s * (1 - s) @ torch.tensor(x_np).to(torch.bfloat16).T
    return f.double(), W.grad.double(), user_grad.double().numpy()
