"""The worker: the grader's code that runs beside student code, in the sandbox (stdlib and numpy only,
torch if present), one module per concern:

`loop` (the job read from the pipe, the exercises served one after another), `loading` (importing the
hand-in's files, once for all its exercises), `limits` (resource limits), `deadline` (a call's CPU
deadline and wall-clock cap, by SIGALRM), `trial` (one trial's calls, and the reruns), `arguments` (each
call's arguments, fresh copies of the inputs), `precision` (reruns lifted above the code's precision),
`autograd_check` (the checked worker's autograd, wrong on every route), `returns` (what a call returned, as
plain numeric arrays, nothing it says of itself believed), `channel` (the result pipe and the progress
page), `tracebacks` (what the student is shown of a failure).

Kept import-free: the in-process runner (in_process.py) imports the parts it shares.
"""
