"""Attack: leaves a POSIX message queue holding a message for the next student.

Only the attack is here: the test puts a correct graph2 before it.
"""
import ctypes, os
try:
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    rt.mq_open.restype = ctypes.c_int
    q = rt.mq_open(b"/grader-attack-queue", os.O_CREAT | os.O_RDWR, 0o666, None)
    if q >= 0:
        rt.mq_send(q, b"LEAKED-ANSWER", 13, 0)
except OSError:
    pass
