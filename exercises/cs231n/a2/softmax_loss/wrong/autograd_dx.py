import torch


def softmax_loss(x, y):
    xt = torch.tensor(x, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(xt, torch.tensor(y))
    loss.backward()
    return loss.item(), xt.grad.numpy()
