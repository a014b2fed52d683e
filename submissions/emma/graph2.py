import numpy as np
import torch
from torch.autograd import Variable
import torch.nn.functional as F

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))

def graph2(W_np, x_np, b_np):
    W = Variable(torch.Tensor(W_np), requires_grad=True)
    x = torch.tensor(x_np, requires_grad=True).type(torch.FloatTensor)
    b = torch.tensor(b_np, requires_grad=True).type(torch.FloatTensor)
    u = torch.matmul(W, x) + b
    g = F.sigmoid(u)
    f = torch.sum(g)
    user_grad = (sigmoid(np.matmul(W_np, x_np) + b_np)*(1 - sigmoid(np.matmul(W_np, x_np) + b_np)))*x_np.T
    f.backward(retain_graph=True)
    auto_grad = W.grad
    print("auto_grad", auto_grad) 
    print("user_grad", user_grad)
    # END YOUR CODE
    return f, auto_grad, user_grad




if __name__ == "__main__":
    iterations = 1000
    sizes = np.random.randint(2,10, size=(iterations))
    for i in range(iterations):
        size = sizes[i]
        print("i, size", i, size)
        W_np = np.random.rand(size, size)
        x_np = np.random.rand(size, 1)
        b_np = np.random.rand(size, 1)
        f, auto_grad, user_grad = graph2(W_np, x_np, b_np)
        manual_f = np.sum(sigmoid(np.matmul(W_np, x_np) + b_np))
        assert np.isclose(f.data.numpy(), manual_f, atol=1e-4), "f not correct"
        assert np.allclose(auto_grad.numpy(), user_grad), "Gradient not correct"
