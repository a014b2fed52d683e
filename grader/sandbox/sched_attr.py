"""A process's scheduling attributes as the kernel holds them: sched_getattr(2), every field.

`os.sched_getscheduler` and `os.sched_getparam` tell the policy and the real-time priority only. Under
bubblewrap a job shares its uid with the zygote, and sched_setattr(2) lets it change more of the zygote's
scheduling that every later job forked from it inherits: the fair class's time slice (`sched_runtime`,
Linux 6.12+; tried on 6.18, a child lengthened its parent's slice, unprivileged, and the next child
forked was born with it), the deadline class's runtime, deadline and period, utilisation
clamps, the reset-on-fork flag. The zygote records them all with its other state and is replaced when a
job changed any (zygote.py).

Worker side: stdlib only (the zygote imports it).
"""

from __future__ import annotations

import ctypes
import os
import struct
from dataclasses import dataclass

# struct sched_attr (include/uapi/linux/sched/types.h): size, policy, flags, nice, priority, runtime,
# deadline, period (SCHED_ATTR_SIZE_VER0, 48 bytes), util_min, util_max (VER1, 56 bytes).
_LAYOUT = struct.Struct("=IIQiIQQQII")
# Room for fields later kernels add: the kernel fills min(this, its own size) and says how much in
# `size`; the bytes past the 56 known ones are kept as they are, so a new field changed counts too.
_BUFFER = 128
_SYS_SCHED_GETATTR = {"x86_64": 315, "aarch64": 275}.get(os.uname().machine)


@dataclass(frozen=True)
class SchedAttributes:
    size: int
    policy: int
    flags: int
    nice: int
    priority: int
    runtime: int  # ns: SCHED_DEADLINE's runtime, or the fair class's slice (6.12+)
    deadline: int
    period: int
    util_min: int
    util_max: int
    extra: bytes  # what the kernel returned past the 56 bytes known here


def read(pid: int = 0) -> SchedAttributes | None:
    """`pid`'s attributes (0: this process); None where the kernel or the machine has no sched_getattr."""
    if _SYS_SCHED_GETATTR is None:
        return None
    buffer = ctypes.create_string_buffer(_BUFFER)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_SYS_SCHED_GETATTR, pid, buffer, _BUFFER, 0) != 0:
        return None
    raw = buffer.raw
    size, policy, flags, nice, priority, runtime, deadline, period, low, high = _LAYOUT.unpack_from(raw)
    extra = raw[_LAYOUT.size : min(size, _BUFFER)]
    return SchedAttributes(size, policy, flags, nice, priority, runtime, deadline, period, low, high, extra)
