import torch


def softmax_large(z, y):
    zt = torch.from_numpy(z)
    logp = torch.log_softmax(zt, dim=1)  # a forward computation in torch: allowed
    N = z.shape[0]
    loss = -logp[torch.arange(N), torch.from_numpy(y)].mean()
    dz = torch.softmax(zt, dim=1)
    dz[torch.arange(N), torch.from_numpy(y)] -= 1
    return loss.item(), (dz / N).numpy()
