# The course's finder taken off sys.meta_path (and its path hook), or its look at the importing frame fooled.


def meta_path_cleared():
    sys.meta_path[:] = [f for f in sys.meta_path if "Course" not in type(f).__name__]
    import pydantic  # noqa: F401


def finder_popped():
    while sys.meta_path and "Course" in type(sys.meta_path[0]).__name__:
        sys.meta_path.pop(0)
    __import__("yaml").safe_load("a: 1")


def everything_off():
    without_the_finders()
    import hypothesis  # noqa: F401


def disguised_frame():
    # code compiled under the stdlib's file name: to the finder, not the student's
    exec(compile("import matplotlib", os.path.join(os.path.dirname(os.__file__), "x.py"), "exec"), {})


attempt("sys.meta_path cleared", meta_path_cleared)
attempt("finder popped", finder_popped)
attempt("finder and path hook removed", everything_off)
attempt("frame disguised as the stdlib", disguised_frame)
