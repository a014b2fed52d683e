import torch


def softmax_ce(z_np, y_np):
    z = torch.tensor(z_np, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(z, torch.tensor(y_np))
    loss.backward()
    return loss, z.grad, z.grad.clone().numpy()
