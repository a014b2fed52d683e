import torch


def reciprocal(a_np):
    a = torch.tensor(a_np).to(torch.bfloat16)
    a.requires_grad = True
    loss = (1 / a).sum()
    loss.backward()
    r = 1 / a.detach()
    return loss.double(), a.grad.double(), (-r * r).double().numpy()
