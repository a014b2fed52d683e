"""Attack: sets the autogroup nice of its session to 19 (every process of the session, later hand-ins of
the same zygote among them if they share it, gets less CPU).

Only the attack is here: the test puts a correct graph2 before it.
"""
try:
    with open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write("19")
except OSError:
    pass
