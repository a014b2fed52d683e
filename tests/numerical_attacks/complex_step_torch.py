"""The complex step in torch: complex128 tensors, perturbed one entry at a time."""
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    x, b = torch.tensor(x_np), torch.tensor(b_np)
    f = torch.sigmoid(W @ x + b).sum()
    f.backward()
    step = 1e-25
    user_grad = torch.zeros_like(W)
    for k in range(W.numel()):
        bump = torch.zeros(W.numel(), dtype=torch.complex128)
        bump[k] = step * 1j
        Wc = W.detach().to(torch.complex128) + bump.reshape(W.shape)
        user_grad.view(-1)[k] = torch.sigmoid(Wc @ x.to(torch.complex128) + b).sum().imag / step
    return f, W.grad, user_grad
