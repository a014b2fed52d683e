"""Attack: reads the exercise's solution and spec, the grader's environment and command line.

Only the attack is here: the test puts a correct graph2 before it.
"""
import glob, os
found = []
for pattern in ("/work/*/exercises/graph2/solution.py", "/work/*/exercises/*/graph2/solution.py", "/tmp/*/exercises/graph2/solution.py",
                "/tmp/**/graph2/solution.py", "/autograder/source/exercises/*/solution.py"):
    for path in glob.glob(pattern, recursive=True):
        try:
            found.append(open(path).read())
        except OSError:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for name in ("environ", "cmdline"):
            try:
                text = open(f"/proc/{pid}/{name}", "rb").read()
            except OSError:
                continue
            if b"grader" in text and b"run" in text or b"PATH=" in text:
                found.append(text.decode(errors="replace"))
if found:
    print("LEAK", found[0][:200])
