"""Attack: leaves a System V shared memory segment and message queue for the next student.

Only the attack is here: the test puts a correct graph2 before it.
"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget(0x6A7, 4096, 0o1000 | 0o666)  # IPC_CREAT
libc.msgget(0x6A7, 0o1000 | 0o666)
