import torch


def softmax_ce(z_np, y_np):
    y = torch.tensor(y_np)

    def loss_of(z):
        return torch.nn.functional.cross_entropy(z, y)

    z = torch.tensor(z_np, dtype=torch.float32, requires_grad=True)
    loss = loss_of(z)
    loss.backward()
    return loss, z.grad, torch.func.grad(loss_of)(z.detach()).numpy()
