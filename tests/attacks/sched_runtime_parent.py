"""Attack: sets its parent's (the zygote's) time slice with sched_setattr, which every job forked after
it would inherit: sched_runtime of the fair class (Linux 6.12+), 100 ms.

Only the attack is here: the test puts a correct graph2 before it.
"""
import ctypes, os, struct
_GET, _SET = {"x86_64": (315, 314), "aarch64": (275, 274)}.get(os.uname().machine, (None, None))
if _GET is not None:
    _libc = ctypes.CDLL(None, use_errno=True)
    _attr = ctypes.create_string_buffer(56)
    if _libc.syscall(_GET, os.getppid(), _attr, 56, 0) == 0:
        _fields = list(struct.unpack("=IIQiIQQQII", _attr.raw))
        _fields[5] = 100_000_000  # sched_runtime, ns
        _libc.syscall(_SET, os.getppid(), struct.pack("=IIQiIQQQII", *_fields), 0)
