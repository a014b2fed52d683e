import math


def sigmoid(x):
    s = 1 / (1 + math.exp(-x))
    return s
