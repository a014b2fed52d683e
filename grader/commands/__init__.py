"""The commands of `grader`, one module per family; each returns an Outcome, which cli.main alone turns into
the exit code.
"""
