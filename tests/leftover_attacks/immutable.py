"""Leaves a file made immutable and a folder made append-only (chattr +i, +a), where it may: only with
CAP_LINUX_IMMUTABLE (a job run as root in the base layer, GRADER_SANDBOX_UID=off); elsewhere refused.

Only the attack is here: the test puts a correct graph2 before it.
"""
import fcntl, os, sys
def _chattr(path, flags):
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, 0x40086602, bytearray(flags.to_bytes(4, sys.byteorder)))  # FS_IOC_SETFLAGS
            print("IMMUTABLE set", path)
        finally:
            os.close(fd)
    except OSError:
        pass
try:
    with open("frozen.txt", "w") as _handle:
        _handle.write("x")
    os.mkdir("append-only")
    with open("append-only/f", "w") as _handle:
        _handle.write("x")
    _chattr("frozen.txt", 0x10)  # FS_IMMUTABLE_FL
    _chattr("append-only", 0x20)  # FS_APPEND_FL
except OSError:
    pass
