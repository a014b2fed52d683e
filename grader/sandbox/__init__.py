"""The trust boundary: everything that runs beside student code, or starts, walls in and reads it.

Worker side (imported next to student code, inside the sandbox: stdlib and numpy only, torch if present):
`zygote` (the warm process that forks one worker per hand-in), `worker/` (imports the hand-in once, then
serves its exercises one after another, calling them per trial: a module per concern), `protocol` (the
wire format), `credentials` (the base layer's uid per slot, keyrings), `landlock` (the base layer's
confinement), `walls` (a job's view of the installed packages, by mounts or Landlock), `removal` (what
a hand-in left, removed: bounded, links never followed, never fatal; the grader's side uses it too) and
`sched_attr` (the scheduling attributes no job may change).
Grader side: `process` (one hand-in's worker process and its channels), `runner` (its
exercises one after another on it), `reading` (the read loop and what each message means), `deadlines`
(an exercise's deadlines and budgets, enforced from outside), `report` (what a run hands back), `failures`
(what went wrong, in words), `payload` (the worker's messages, validated), `warm` (the pool of zygotes),
`isolation` (bubblewrap or the base layer), `course_view` (what of the installed packages a course's
hand-ins see), `cgroups` (bounding and counting processes), `cpu_watch` (the CPU counted from outside).

Kept import-free on purpose: the worker imports this package beside student code, and must not pay for
(or expose) the grader's own dependencies.
"""
