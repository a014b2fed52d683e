"""The trust boundary: everything that runs beside student code, or starts, walls in and reads it.

Worker side (imported next to student code, inside the sandbox: stdlib and numpy only, torch if present):
`zygote` (the warm process that forks one worker per submission), `worker` (imports the hand-in, calls
it per trial), `protocol` (the wire format), `credentials` (the base layer's uid per slot, keyrings) and
`landlock` (the base layer's confinement). Grader side: `runner` (one submission's worker, its
channels and read loop), `report` (what a run hands back), `failures` (what went wrong, in words),
`payload` (the worker's messages, validated), `warm` (the pool of zygotes), `isolation` (bubblewrap or
the base layer), `cgroups` (bounding processes).

Kept import-free on purpose: the worker imports this package beside student code, and must not pay for
(or expose) the grader's own dependencies.
"""
