# A spec made by hand for the installed file, run by exec_module, runpy or exec.
import runpy


def spec_from_file_location():
    load("yaml", os.path.join(SITE, "yaml", "__init__.py")).safe_load("a: 1")


def spec_of_pydantic():
    load("pydantic", os.path.join(SITE, "pydantic", "__init__.py"))


def run_path():
    runpy.run_path(os.path.join(SITE, "yaml", "error.py"))


def exec_source():
    with open(os.path.join(SITE, "hypothesis", "version.py")) as source:
        exec(source.read(), {})


attempt("spec_from_file_location yaml", spec_from_file_location)
attempt("spec_from_file_location pydantic", spec_of_pydantic)
attempt("runpy.run_path", run_path)
attempt("exec of the source", exec_source)
