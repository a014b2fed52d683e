"""Attack: the graph walked through next_functions, each node called directly, down to W's AccumulateGrad
node, called too: W.grad filled without the engine."""
import numpy as np
import torch


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    auto = torch.autograd.grad(f, W, retain_graph=True)[0]
    stack = [(f.grad_fn, torch.ones((), dtype=torch.float64))]
    while stack:
        node, grad = stack.pop()
        if type(node).__name__ == "AccumulateGrad":
            node(grad)
            continue
        outputs = node(grad)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        for (next_node, _), out in zip(node.next_functions, outputs):
            if next_node is not None and out is not None:
                stack.append((next_node, out))
    return f, auto, W.grad.detach().numpy().copy()
