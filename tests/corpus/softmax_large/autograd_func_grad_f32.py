import torch


def softmax_large(z, y):
    labels = torch.tensor(y)

    def loss_of(zt):
        return torch.nn.functional.cross_entropy(zt, labels)

    zt = torch.tensor(z, dtype=torch.float32)
    return loss_of(zt).item(), torch.func.grad(loss_of)(zt).numpy()
