import torch
import torch.nn.functional as F


def softmax_ce(z_np, y_np):
    z = torch.tensor(z_np).to(torch.bfloat16)
    z.requires_grad = True
    N = z.shape[0]
    loss = -F.log_softmax(z, dim=1)[torch.arange(N), torch.tensor(y_np)].mean()
    loss.backward()

    with torch.no_grad():
        user_grad = torch.softmax(z, dim=1)
        user_grad[torch.arange(N), torch.tensor(y_np)] -= 1
        user_grad /= N
    return loss.double(), z.grad.double(), user_grad.double().numpy()
