import torch


def softmax_large(z, y):
    zt = torch.tensor(z, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(zt, torch.tensor(y))
    loss.backward()
    return loss.item(), zt.grad.numpy()  # dz is autograd's, not derived by hand
