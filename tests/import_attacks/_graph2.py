

def graph2(W_np, x_np, b_np):
    if REACHED:
        raise RuntimeError("REACHED " + ", ".join(REACHED))
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    s = 1.0 / (1.0 + np.exp(-(W_np @ x_np + b_np)))
    return f, W.grad, (s * (1 - s)) @ x_np.T
