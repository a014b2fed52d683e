# The same packages installed elsewhere: the base interpreter's site-packages (a virtual environment
# hides it from sys.path only) and the system's dist-packages. Their paths: OTHER, set by the test.


def other_folder(path):
    def variant():
        without_the_finders()
        folder = os.path.dirname(os.path.dirname(path)) if path.endswith("__init__.py") else os.path.dirname(path)
        sys.path.append(folder)
        load("other_" + os.path.basename(os.path.dirname(path)), path)

    return variant


for number, path in enumerate(OTHER):
    attempt(f"other folder {number}: {path}", other_folder(path))
