"""Attack: torch's backward formulas applied by calling the graph's grad_fn nodes directly, never
through the engine's run_backward."""
import numpy as np
import torch


def _by_nodes(f, W):
    grads = {f.grad_fn: torch.ones((), dtype=torch.float64)}
    order = [f.grad_fn]
    found = None
    while order:
        node = order.pop(0)
        outputs = node(grads.pop(node))
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        for (next_node, _), grad in zip(node.next_functions, outputs):
            if next_node is None or grad is None:
                continue
            if hasattr(next_node, "variable") and next_node.variable is W:
                found = grad if found is None else found + grad
            elif not hasattr(next_node, "variable"):
                grads[next_node] = grads[next_node] + grad if next_node in grads else grad
                if next_node not in order:
                    order.append(next_node)
    return found


def graph2(W_np, x_np, b_np):
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    user = _by_nodes(f, W).detach().numpy().copy()
    f.backward()
    return f, W.grad, user
