"""Attack: connects to a TCP listener and an abstract unix socket on the host.

Only the attack is here: the test puts a correct graph2 before it.
"""
import os, socket
port = int(os.environ.get("GRADER_ATTACK_PORT", "47614"))
for target in (("127.0.0.1", 47614),):
    try:
        socket.create_connection(target, timeout=1).sendall(b"LEAK")
    except OSError:
        pass
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect("\0grader-attack-abstract")
    s.sendall(b"LEAK")
except OSError:
    pass
