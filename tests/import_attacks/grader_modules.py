# The grader's own modules beyond the worker's: judging, the exercise's references, reports.
import grader


def judging():
    import grader.judging.classify  # noqa: F401


def references():
    from grader.exercise import reference  # noqa: F401


def report():
    importlib.import_module("grader.report.terminal")


def read_source():
    with open(os.path.join(os.path.dirname(grader.__file__), "judging", "provenance.py")) as source:
        source.read()


def grader_side_sandbox():
    importlib.import_module("grader.sandbox.course_view")


attempt("grader.judging", judging)
attempt("grader.exercise.reference", references)
attempt("grader.report", report)
attempt("grader's source read", read_source)
attempt("grader.sandbox.course_view", grader_side_sandbox)
