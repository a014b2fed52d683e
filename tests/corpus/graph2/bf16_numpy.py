import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, dtype=torch.bfloat16, requires_grad=True)
    x = torch.tensor(x_np, dtype=torch.bfloat16)
    b = torch.tensor(b_np, dtype=torch.bfloat16)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    with torch.no_grad():
        s = torch.sigmoid(W @ x + b)
        user_grad = (s * (1 - s)) @ x.T
    # numpy has no bfloat16: .float() first, giving float32 arrays of bfloat16 values
    return f.detach().float().numpy(), W.grad.float().numpy(), user_grad.float().numpy()
