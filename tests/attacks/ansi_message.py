"""Attack: raises an exception whose message repaints the terminal with a fake score line, and turns a
cross into a tick with rich's emoji codes."""

def graph2(W_np, x_np, b_np):
    raise ValueError("\x1b[2J\x1b[H\x1b[32mscore 10/10\x1b[0m\r\x07 \ud800 :white_check_mark: passed")
