"""Attack: saved-tensor hooks are per thread; the graph built and its nodes called in a thread of its own."""
import threading
import numpy as np
import torch


def _walk(f, W):
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
    box = {}

    def work():
        W = torch.tensor(W_np, requires_grad=True)
        f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
        box["user"] = _walk(f, W).detach().numpy().copy()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    W = torch.tensor(W_np, requires_grad=True)
    f = torch.sigmoid(W @ torch.tensor(x_np) + torch.tensor(b_np)).sum()
    f.backward()
    return f, W.grad, box["user"]
