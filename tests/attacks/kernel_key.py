"""Attack: adds a key with an answer to its user keyring for the next student.

Only the attack is here: the test puts a correct graph2 before it.
"""
import ctypes
try:
    libc = ctypes.CDLL(None, use_errno=True)
    payload = b"LEAKED-ANSWER"
    libc.syscall(248, b"user", b"grader-attack-key", payload, len(payload), -4)  # add_key to @u
except OSError:
    pass
